"use strict";
(async () => {
  const main = document.getElementById("main");
  try {
    const k = await api("/api/lessons");
    section(main, "Lessons").appendChild(table(k.lessons, [
      ["lesson", "insight_id"], ["scope", "scope"], ["state", "state"],
      ["importance", "importance"], ["text", "text"],
    ]));
    section(main, "Recipes").appendChild(table(k.recipes, [
      ["recipe", "id"], ["state", "state"], ["basis", "basis"],
      ["task", r => r.task && r.task.name], ["reason", "reason"],
    ]));
    section(main, "Lifecycle").appendChild(table(k.lifecycle, [
      ["kind", "kind"], ["id", "id"], ["state", "state"], ["reason", "reason"], ["events", "events"],
    ]));
  } catch (err) { showError(main, err); }
})();
