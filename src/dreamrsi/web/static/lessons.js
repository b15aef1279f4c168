"use strict";
(() => {
  const main = document.getElementById("main");
  const box = el("div");
  main.appendChild(box);
  live(async () => {
    let k;
    try { k = await api("/api/lessons"); }
    catch (err) { box.replaceChildren(); showError(box, err); return; }
    box.replaceChildren();
    section(box, "Lessons").appendChild(table(k.lessons, [
      ["lesson", "insight_id"], ["scope", "scope"], ["state", "state"],
      ["importance", "importance"], ["text", "text"],
    ]));
    section(box, "Recipes").appendChild(table(k.recipes, [
      ["recipe", "id"], ["state", "state"], ["basis", "basis"],
      ["task", r => r.task && r.task.name], ["reason", "reason"],
    ]));
    section(box, "Lifecycle").appendChild(table(k.lifecycle, [
      ["kind", "kind"], ["id", "id"], ["state", "state"], ["reason", "reason"], ["events", "events"],
    ]));
  });
})();
