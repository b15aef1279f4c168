"use strict";
(async () => {
  const main = document.getElementById("main");
  const detail = el("div"); detail.id = "repo-run-detail";
  try {
    const page = await api("/api/repo-runs?limit=1000");
    main.appendChild(el("p", page.total + " Dream Run(s)"));
    main.appendChild(table(page.items, [
      ["run", "run_id"], ["status", "status"], ["objective", "objective"], ["repository", "repo"],
      ["dreams", "dreams"], ["open hypotheses", "open_hypotheses"], ["steps", "steps"],
    ], r => show(r.run_id)));
    main.appendChild(detail);
  } catch (err) { showError(main, err); }
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
