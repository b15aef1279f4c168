"use strict";
(() => {
  const main = document.getElementById("main");
  const detail = el("div"); detail.id = "pass-detail";
  const list = el("div");
  list.id = "passes";
  main.appendChild(list);
  main.appendChild(detail);
  live(async () => {
    let page;
    try { page = await api("/api/survival?limit=1000"); }
    catch (err) { list.replaceChildren(); showError(list, err); return; }
    list.replaceChildren(el("p", page.total + " pass(es)"), table(page.items, [
      ["pass", "pass_id"], ["run", "run_id"], ["node", "node_id"], ["verdict", "verdict"],
      ["failing", r => r.failing.join(", ")], ["delta", r => r.delta ? fmt(r.delta.mean) : ""],
      ["risks", r => r.risks.length],
    ], r => show(r.pass_id)));
  });
  async function show(passId) {
    detail.replaceChildren(el("h2", "Pass " + passId));
    try {
      const p = await api("/api/survival/" + encodeURIComponent(passId));
      const rep = p.report;
      detail.appendChild(el("p", "Verdict: " + p.verdict));
      detail.appendChild(table(rep.findings || [], [["check", "check"], ["reason", "reason"],
        ["fails", r => r.fails ? "yes" : "no"], ["message", "message"], ["rows", r => (r.rows || []).join(", ")]]));
      detail.appendChild(el("h3", "Claims"));
      detail.appendChild(pre(JSON.stringify(rep.claims || {}, null, 1)));
      detail.appendChild(el("h3", "Risks"));
      const ul = el("ul");
      for (const r of rep.risks || []) ul.appendChild(el("li", r));
      detail.appendChild(ul);
      if (rep.diff) { detail.appendChild(el("h3", "Diff against the base")); detail.appendChild(pre(rep.diff)); }
    } catch (err) { showError(detail, err); }
  }
})();
