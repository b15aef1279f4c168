// The discovery tree as SVG: the root on top, each branch a column going down by depth, nodes
// coloured by score and marked by status. Trees up to D.DRAW_ALL nodes are drawn whole; a
// larger one is drawn as its branches (one bar each, its length the branch's depth, its colour
// its best score), and a click on a branch draws that branch's nodes.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

D.DRAW_ALL = Number(D.params().get("draw_all")) || 20000;  // ?draw_all=N: draw at most N
D.TREE_PAGE = 10000;  // the API's largest page of a tree

// Draw `nodes` (rows of /api/runs/RUN/tree) into `svg`; `direction` turns scores into colours.
D.drawTree = function (svg, nodes, direction, selected) {
  const scores = nodes.filter((n) => n.score !== null && n.valid).map((n) => n.score);
  const lo = Math.min(...scores), hi = Math.max(...scores);
  const t = (s) => {
    if (s === null || !scores.length) return null;
    const u = hi > lo ? (s - lo) / (hi - lo) : 1;
    return direction === "minimize" ? 1 - u : u;
  };
  const columns = new Map();
  let depth = 0;
  for (const n of nodes) {
    if (n.branch > 0 && !columns.has(n.branch)) columns.set(n.branch, columns.size);
    depth = Math.max(depth, n.depth);
  }
  const cols = Math.max(1, columns.size);
  const dx = Math.max(3, Math.min(18, 1400 / cols)), dy = Math.max(3, Math.min(18, 1400 / Math.max(1, depth)));
  const radius = Math.max(1.2, Math.min(dx, dy) * 0.38).toFixed(2);
  const W = cols * dx + 20, H = (depth + 1) * dy + 20;
  const place = new Map();
  for (const n of nodes) {
    const x = n.branch === 0 ? W / 2 : 10 + (columns.get(n.branch) + 0.5) * dx;
    place.set(n.node_id, [x, 10 + n.depth * dy + dy / 2]);
  }
  let d = "";
  for (const n of nodes) {
    const p = n.parent_id && place.get(n.parent_id), c = place.get(n.node_id);
    if (p) d += "M" + p[0].toFixed(1) + " " + p[1].toFixed(1) + "L" + c[0].toFixed(1) + " " + c[1].toFixed(1);
  }
  const frag = document.createDocumentFragment();
  frag.appendChild(D.svg("path", { class: "edges", d: d }));
  for (const n of nodes) {
    const [x, y] = place.get(n.node_id);
    const circle = document.createElementNS(SVG, "circle");
    circle.setAttribute("cx", x.toFixed(1));
    circle.setAttribute("cy", y.toFixed(1));
    circle.setAttribute("r", radius);
    circle.setAttribute("class", "node st-" + String(n.status).replace(/[^a-z]/g, "") +
      (n.branch === 0 ? " root" : "") + (n.node_id === selected ? " selected" : ""));
    circle.setAttribute("fill", D.scoreColour(n.valid ? t(n.score) : null));
    circle.setAttribute("data-node", n.node_id);
    frag.appendChild(circle);
  }
  D.setAttrs(svg, { width: W, height: H, viewBox: "0 0 " + W + " " + H });
  svg.replaceChildren(frag);
  // a node's numbers on hover, from one handler (a title per node would double the elements)
  const byId = new Map(nodes.map((n) => [n.node_id, n]));
  svg.onmouseover = (ev) => {
    const id = ev.target.getAttribute && ev.target.getAttribute("data-node");
    const n = id && byId.get(id);
    const hover = document.getElementById("tree-hover");
    if (n && hover) D.fill(hover, "#" + n.seq + " (" + n.node_id + "): " + n.status + ", score " + D.fmt.num(n.score) + ", depth " + n.depth + ", branch " + n.branch);
  };
};

// Draw a big tree's branches as bars; `open(branch)` is called on a click.
D.drawBranches = function (svg, root, branches, direction, open) {
  const scores = branches.filter((b) => b.best_score !== null).map((b) => b.best_score);
  const lo = Math.min(...scores), hi = Math.max(...scores);
  const t = (s) => {
    if (s === null || !scores.length) return null;
    const u = hi > lo ? (s - lo) / (hi - lo) : 1;
    return direction === "minimize" ? 1 - u : u;
  };
  const depth = Math.max(1, ...branches.map((b) => b.depth));
  const dx = Math.max(3, Math.min(18, 1400 / Math.max(1, branches.length)));
  const dy = Math.max(0.05, Math.min(18, 1400 / depth));
  const W = branches.length * dx + 20, H = depth * dy + 40;
  const frag = document.createDocumentFragment();
  frag.appendChild(D.svg("circle", { cx: W / 2, cy: 12, r: 6, class: "node root", fill: "#888",
    "data-node": root }));
  branches.forEach((b, i) => {
    const rect = D.svg("rect", { class: "branch", x: 10 + i * dx + dx * 0.1, y: 26,
      width: Math.max(1, dx * 0.8), height: Math.max(2, b.depth * dy),
      fill: D.scoreColour(t(b.best_score)), "data-branch": b.branch });
    rect.appendChild(D.svg("title", null, "branch " + b.branch + ": " + b.nodes + " nodes, best " + D.fmt.num(b.best_score)));
    frag.appendChild(rect);
  });
  D.setAttrs(svg, { width: W, height: H, viewBox: "0 0 " + W + " " + H });
  svg.replaceChildren(frag);
  svg.onclick = (ev) => {
    const rect = ev.target.closest && ev.target.closest("rect.branch");
    if (rect) open(Number(rect.getAttribute("data-branch")));
  };
};

D.treeLegend = function (box) {
  D.fill(box,
    D.el("span", null, "colour: score (red low → green high; grey: none)"),
    D.el("span", null, "dashed: invalid"), D.el("span", null, "red ring: error / timeout"),
    D.el("span", null, "hollow: lost"));
};
