// One run: its summary, its tree (drawn whole, or as branches when large), a node's panel,
// its curve and attempts per round; refreshed when the store changes.
"use strict";

(function () {
  const runId = decodeURIComponent(window.location.pathname.split("/").filter(Boolean)[1] || "");
  const base = "/api/runs/" + encodeURIComponent(runId);
  const svg = document.getElementById("tree");
  let selected = D.params().get("node");
  let shownNodes = -1, openBranch = null, curve = null;

  async function allPages(path, limit) {
    const items = [];
    for (let offset = 0; ; offset += limit) {
      const page = await D.api(path + (path.includes("?") ? "&" : "?") + "offset=" + offset + "&limit=" + limit);
      items.push(...page.items);
      if (!page.items.length || offset + limit >= page.total) return items;
    }
  }

  function summary(o) {
    const r = o.run;
    document.title = "dreamrsi · " + r.run_id;
    D.fill(document.getElementById("title"), "Run " + r.run_id + " ", D.status(r.status));
    const facts = [["task", r.task], ["policy", r.policy], ["status", r.status + (r.stop_reason ? " (" + r.stop_reason + ")" : "")],
      ["attempts / budget", D.fmt.budget(r)], ["workers", D.text(r.workers)],
      ["best score", D.fmt.num(r.best_score) + (r.best_node ? "  (" + r.best_node + ")" : "")],
      ["verdict", D.verdict(r.survival)], ["tokens in / out", D.fmt.num(r.tokens_in) + " / " + D.fmt.num(r.tokens_out)],
      ["money", D.fmt.money(r.money_usd)], ["CPU", r.cpu_s + " s"], ["elapsed", r.elapsed_s + " s"],
      ["tree", o.tree.nodes + " nodes, " + o.tree.branches + " branches, depth " + o.tree.depth],
      ["models", o.models.map((m) => m.model + " (" + m.calls + " calls)").join(", ") || "–"],
      ["ledger", D.el("a", { href: "/ledger?chain=" + encodeURIComponent(r.run_id) }, "rows and check")]];
    D.fill(document.getElementById("summary"), facts.map(([k, v]) => [D.el("dt", null, k), D.el("dd", null, v)]));
  }

  async function drawTree(o, first) {
    const note = document.getElementById("tree-note");
    if (o.tree.nodes <= D.DRAW_ALL) {
      const t0 = performance.now();
      const whole = first && first.total === o.tree.nodes && first.items.length === first.total;
      const nodes = whole ? first.items : await allPages(base + "/tree", D.TREE_PAGE);
      D.drawTree(svg, nodes, o.run.direction, selected);
      svg.dataset.drawMs = String(Math.round(performance.now() - t0));
      svg.dataset.doneAt = String(Math.round(performance.now()));  // since navigation began
      svg.dataset.nodes = String(nodes.length);
      D.fill(note, nodes.length + " nodes");
      return;
    }
    if (openBranch !== null) {
      const nodes = await allPages(base + "/tree?branch=" + openBranch, D.TREE_PAGE);
      D.drawTree(svg, nodes, o.run.direction, selected);
      svg.dataset.nodes = String(nodes.length);
      D.fill(note, "branch " + openBranch + ": " + nodes.length + " nodes  ",
        D.el("button", { type: "button", onclick: () => { openBranch = null; shownNodes = -1; refresh(); } }, "back to all branches"));
      return;
    }
    let branches = o.branches;
    if (branches.length < o.branches_total) {  // more than one page of branches
      branches = [];
      for (let offset = 0; ; offset += 5000) {
        const page = await D.api(base + "?branch_offset=" + offset + "&branch_limit=5000");
        branches.push(...page.branches);
        if (!page.branches.length || offset + 5000 >= page.branches_total) break;
      }
    }
    D.drawBranches(svg, o.tree.root, branches, o.run.direction, (b) => { openBranch = b; shownNodes = -1; refresh(); });
    svg.dataset.nodes = "0";
    svg.dataset.branches = String(branches.length);
    D.fill(note, o.tree.nodes.toLocaleString("en-US") + " nodes in " + o.tree.branches +
      " branches: too many to draw at once; each bar is a branch (length: depth, colour: best score). Click one to open its nodes.");
  }

  function drawCurve() {
    if (!curve) return;
    const axis = document.getElementById("axis").value;
    D.lineChart(document.getElementById("curve"), { xLabel: D.AXIS_LABEL[axis], yLabel: "best score",
      series: [{ label: runId, points: D.curvePoints(curve, axis) }] });
    D.barChart(document.getElementById("rounds"), { xLabel: "round",
      bars: curve.rounds.map((r) => [String(r.round), r.attempts]) });
  }

  async function refresh() {
    // the overview and the tree's first page at once: most trees are one page
    const first = shownNodes < 0 && openBranch === null ? D.api(base + "/tree?offset=0&limit=" + D.TREE_PAGE).catch(() => null) : null;
    // the first time, the branches too (a big tree is drawn as them); later, the numbers
    const o = await D.api(base + "?branch_limit=" + (shownNodes < 0 ? 5000 : 1));
    summary(o);
    D.treeLegend(document.getElementById("tree-legend"));
    if (o.tree.nodes !== shownNodes) {
      shownNodes = o.tree.nodes;
      await drawTree(o, await first);
      curve = await D.api(base + "/curve");
      drawCurve();
    }
  }

  function diffLines(text) {
    return text.split("\n").map((line) => {
      const cls = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : null;
      return D.el("span", { class: cls }, line + "\n");
    });
  }

  async function openNode(id) {
    selected = id;
    svg.querySelectorAll("circle.selected").forEach((c) => c.classList.remove("selected"));
    svg.querySelectorAll("circle.node").forEach((c) => { if (c.getAttribute("data-node") === id) c.classList.add("selected"); });
    const box = document.getElementById("node");
    D.fill(box, D.el("p", { class: "muted" }, "loading " + id + " …"));
    let n;
    try { n = await D.api(base + "/nodes/" + encodeURIComponent(id)); } catch (err) { D.fill(box, D.el("p", { id: "node-error" }, err.message)); return; }
    const facts = [["node", n.node_id], ["seq / round / depth", n.seq + " / " + n.round + " / " + n.depth],
      ["parent", n.parent_id || "– (root)"], ["status", D.status(n.status)], ["score", D.fmt.num(n.score)],
      ["plan", n.plan || "–"], ["reason", n.reason || "–"], ["model", n.model || "–"],
      ["wall / CPU", D.fmt.ms(n.wall_ms) + " / " + D.fmt.ms(n.cpu_ms)],
      ["tokens in / out", D.fmt.num(n.tokens_in) + " / " + D.fmt.num(n.tokens_out)], ["money", D.fmt.money(n.money_usd)],
      ["commit", D.fmt.short(n.commit)]];
    const metrics = Object.entries(n.metrics || {});
    const parts = [
      D.el("dl", { class: "facts" }, facts.map(([k, v]) => [D.el("dt", null, k), D.el("dd", null, v)])),
      D.el("h3", null, "Feedback"), D.el("pre", { id: "node-feedback" }, n.feedback || ""),
      D.el("h3", null, "Metrics"),
      metrics.length ? D.el("table", null, metrics.map(([k, v]) => D.el("tr", null, D.el("td", null, k), D.el("td", null, D.text(v)))))
        : D.el("p", { class: "muted" }, "none"),
      D.el("h3", null, "Diff against its parent"),
      n.diff.note ? D.el("p", { class: "muted" }, n.diff.note) : null,
      n.diff.text ? D.el("pre", { id: "node-diff" }, diffLines(n.diff.text)) : null,
      n.diff.truncated ? D.el("p", { class: "muted" }, "(cut: the diff is longer)") : null];
    if (n.exchange) {
      parts.push(D.el("h3", null, "Model request and answer"));
      for (const m of n.exchange.messages || []) parts.push(D.el("div", { class: "muted" }, m.role), D.el("pre", null, m.content));
      parts.push(D.el("div", { class: "muted" }, "answer"), D.el("pre", { id: "node-answer" }, n.exchange.answer || ""));
    }
    parts.push(D.el("h3", null, "Ledger rows"), D.el("table", { id: "node-ledger" },
      D.el("tr", null, ["seq", "actor", "command", "exit", "ms", "error"].map((h) => D.el("th", null, h))),
      n.ledger.map((r) => D.el("tr", null, D.el("td", null, r.seq), D.el("td", null, r.actor), D.el("td", null, r.cmd),
        D.el("td", null, D.text(r.exit)), D.el("td", { class: "num" }, D.text(r.duration_ms)), D.el("td", null, r.error || "")))));
    D.fill(box, parts);
    box.dataset.node = n.node_id;
  }

  svg.addEventListener("click", (ev) => {
    const c = ev.target.closest && ev.target.closest("circle.node");
    if (c) openNode(c.getAttribute("data-node"));
  });
  document.getElementById("axis").addEventListener("change", drawCurve);
  D.live(refresh).then(() => { if (selected) openNode(selected); });
})();
