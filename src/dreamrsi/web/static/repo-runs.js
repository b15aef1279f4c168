"use strict";
(() => {
  const main = document.getElementById("main");
  const detail = el("div"); detail.id = "repo-run-detail";
  const list = el("div");
  list.id = "repo-runs";
  main.appendChild(list);
  main.appendChild(detail);
  live(async () => {
    let page;
    try { page = await api("/api/repo-runs?limit=1000"); }
    catch (err) { list.replaceChildren(); showError(list, err); return; }
    list.replaceChildren(el("p", page.total + " Dream Run(s)"), table(page.items, [
      ["run", "run_id"], ["status", "status"], ["objective", "objective"], ["repository", "repo"],
      ["dreams", "dreams"], ["open hypotheses", "open_hypotheses"], ["steps", "steps"],
    ], r => show(r.run_id)));
  });
  async function show(runId) {
    detail.replaceChildren(el("h2", "Dream Run " + runId));
    try {
      const d = await api("/api/repo-runs/" + encodeURIComponent(runId));
      detail.appendChild(el("p", "Objective: " + d.objective));
      detail.appendChild(el("h3", "Dreams"));
      detail.appendChild(table(d.dreams, [["dream", "dream"], ["kind", "kind"], ["status", "status"],
        ["parent", "parent"], ["head", "head"], ["score", "score"], ["question", "question"], ["answer", "answer"]]));
      detail.appendChild(el("h3", "Hypotheses"));
      detail.appendChild(table(d.hypotheses, [["id", "hypothesis"], ["text", "text"], ["status", "status"],
        ["test", "test"], ["history", r => r.history.map(h => h.status).join(" \u2192 ")]]));
      detail.appendChild(el("h3", "Questions"));
      detail.appendChild(table(d.questions, [["id", "question"], ["text", "text"], ["answer", "answer"]]));
      detail.appendChild(el("h3", "Autopsies"));
      detail.appendChild(table(d.autopsies, [["dream", "dream"], ["text", "text"]]));
      detail.appendChild(el("h3", "Brief"));
      detail.appendChild(pre(JSON.stringify(d.brief, null, 1)));
    } catch (err) { showError(detail, err); }
  }
})();
