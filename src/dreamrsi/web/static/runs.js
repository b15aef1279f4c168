// The runs page: every run and loop, refreshed when the store changes.
"use strict";

(function () {
  let runOffset = 0, loopOffset = 0;
  const chosenRuns = new Set(), chosenLoops = new Set();

  function tick(set, id) {
    return D.el("input", { type: "checkbox", class: "checks", checked: set.has(id) ? "checked" : null,
      onchange: (ev) => { if (ev.target.checked) set.add(id); else set.delete(id); } });
  }

  function runRow(r) {
    return D.el("tr", { "data-run": r.run_id },
      D.el("td", null, tick(chosenRuns, r.run_id)),
      D.el("td", null, D.el("a", { href: "/runs/" + encodeURIComponent(r.run_id) }, r.run_id)),
      D.el("td", null, r.task), D.el("td", null, r.policy),
      D.el("td", null, D.status(r.status), r.stop_reason ? D.el("span", { class: "muted" }, " " + r.stop_reason) : null),
      D.el("td", { class: "num" }, D.fmt.budget(r)),
      D.el("td", { class: "num" }, D.fmt.num(r.tokens_in + r.tokens_out)),
      D.el("td", { class: "num" }, D.fmt.money(r.money_usd)),
      D.el("td", { class: "num" }, D.fmt.num(r.best_score)),
      D.el("td", null, D.verdict(r.survival)),
      D.el("td", { class: "muted" }, D.fmt.time(r.created_at)));
  }

  function loopRow(l) {
    return D.el("tr", { "data-loop": l.loop_id },
      D.el("td", null, tick(chosenLoops, l.loop_id)),
      D.el("td", null, D.el("a", { href: "/curves?loop=" + encodeURIComponent(l.loop_id) }, l.loop_id)),
      D.el("td", null, l.task), D.el("td", null, l.arm), D.el("td", null, D.text(l.seed)),
      D.el("td", null, D.status(l.status)),
      D.el("td", { class: "num" }, l.rounds + (l.rounds_planned ? " / " + l.rounds_planned : "")),
      D.el("td", { class: "num" }, D.fmt.num(l.attempts)),
      D.el("td", { class: "num" }, D.fmt.num(l.tokens_in + l.tokens_out)),
      D.el("td", { class: "num" }, D.fmt.money(l.money_usd)),
      D.el("td", { class: "num" }, D.fmt.num(l.best_score)),
      D.el("td", null, D.verdict(l.survival)));
  }

  async function refresh() {
    const [runs, loops] = await Promise.all([
      D.api("/api/runs?offset=" + runOffset + "&limit=50"),
      D.api("/api/loops?offset=" + loopOffset + "&limit=50")]);
    D.fill(document.querySelector("#runs tbody"), runs.items.map(runRow));
    D.pager(document.getElementById("runs-pager"), runs, (o) => { runOffset = o; refresh(); });
    D.fill(document.querySelector("#loops tbody"), loops.items.map(loopRow));
    D.pager(document.getElementById("loops-pager"), loops, (o) => { loopOffset = o; refresh(); });
    document.body.dataset.loaded = String(runs.total);
  }

  function compare(kind, set) {
    if (!set.size) return;
    const q = new URLSearchParams();
    for (const id of set) q.append(kind, id);
    window.location.href = "/curves?" + q.toString();
  }
  document.getElementById("compare").addEventListener("click", () => compare("run", chosenRuns));
  document.getElementById("compare-loops").addEventListener("click", () => compare("loop", chosenLoops));
  D.live(refresh);
})();
