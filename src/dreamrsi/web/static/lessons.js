"use strict";
(() => {
  const main = document.getElementById("main");
  const box = el("div");
  const detail = el("div");
  detail.id = "knowledge-detail";
  main.append(box, detail);
  live(async () => {
    let k;
    try { k = await api("/api/lessons"); }
    catch (err) { box.replaceChildren(); showError(box, err); return; }
    box.replaceChildren();
    const lessons = section(box, "Lessons");
    lessons.id = "lessons";
    lessons.appendChild(table(k.lessons, [
      ["lesson", "insight_id"], ["scope", "scope"], ["state", "state"],
      ["importance", "importance"], ["text", "text"],
    ], r => show("Lesson " + r.insight_id, "/api/lessons/" + encodeURIComponent(r.insight_id), d =>
      [el("p", d.text), table(d.events, [["seq", "seq"], ["event", "kind"], ["payload", "payload"]])])));
    const recipes = section(box, "Recipes");
    recipes.id = "recipes";
    recipes.appendChild(table(k.recipes, [
      ["recipe", "id"], ["state", "state"], ["basis", "basis"],
      ["task", r => r.task && r.task.name], ["reason", "reason"], ["error", r => r.error || ""],
    ], r => show("Recipe " + r.id, "/api/recipes/" + encodeURIComponent(r.id), d =>
      [...(d.error ? [el("p", "error: " + d.error)] : []), pre(JSON.stringify(d, null, 1))])));
    section(box, "Lifecycle").appendChild(table(k.lifecycle, [
      ["kind", "kind"], ["id", "id"], ["state", "state"], ["reason", "reason"], ["events", "events"],
    ]));
  });
  async function show(title, url, render) {
    detail.replaceChildren(el("h2", title));
    try { detail.append(...render(await api(url))); }
    catch (err) { showError(detail, err); }
  }
})();
