"use strict";
// A recorded tree replayed under a chosen policy: each step reveals the nodes of one round.
(async () => {
  const main = document.getElementById("main");
  const runId = lastSegment();
  document.getElementById("title").textContent = "Replay of run " + runId;
  let choices;
  try { choices = await api("/api/replay/" + encodeURIComponent(runId) + "/choices"); }
  catch (err) { showError(main, err); return; }
  const controls = el("div", null, "controls");
  const select = el("select");
  select.id = "policy-select";
  const seen = new Set();
  function option(value, label) {
    if (seen.has(value)) return;
    seen.add(value);
    const o = el("option", label);
    o.value = value;
    select.appendChild(o);
  }
  option(choices.policy, "the run's own: " + choices.policy);
  if (choices.deployed) option(choices.deployed.policy, "deployed: " + choices.deployed.policy);
  for (const v of choices.versions) option(v.policy, v.policy);
  const spec = el("input");
  spec.id = "policy-spec";
  spec.placeholder = "or a spec, e.g. greedy:branches=3,top=2";
  const workers = el("input");
  workers.id = "workers"; workers.type = "number"; workers.min = "1";
  workers.value = String(choices.workers || 1);
  const budget = el("input");
  budget.id = "budget"; budget.type = "number"; budget.min = "1";
  if (choices.budget) budget.value = String(choices.budget);
  const load = el("button", "Replay"); load.id = "load";
  const step = el("button", "Step"); step.id = "step";
  const play = el("button", "Play"); play.id = "play";
  const reset = el("button", "Reset"); reset.id = "reset";
  controls.append(el("label", "policy"), select, spec, el("label", "W"), workers,
                  el("label", "budget"), budget, load, step, play, reset);
  main.appendChild(controls);
  const status = el("p"); status.id = "replay-status";
  const roundNo = el("span", "0"); roundNo.id = "round-no";
  const count = el("span", "0"); count.id = "revealed-count";
  status.append("Round ", roundNo, " of ", el("span", "0"), "; revealed ", count, " node(s)");
  main.appendChild(status);
  const result = el("p"); result.id = "replay-result";
  main.appendChild(result);
  const holder = el("div");
  main.appendChild(holder);
  const revealedList = el("ol"); revealedList.id = "revealed-list";
  main.appendChild(revealedList);

  let data = null, shown = 0, timer = null;
  const circles = new Map();

  function draw(tree) {
    circles.clear();
    const scores = tree.map(n => n.score).filter(s => s !== null && s !== undefined);
    const lo = Math.min(...scores), hi = Math.max(...scores);
    const branches = Math.max(1, ...tree.map(n => (n.branch || 0)));
    const depth = Math.max(1, ...tree.map(n => n.depth || 0));
    const dx = 24, dy = 22, width = (branches + 1) * dx + 20, height = (depth + 1) * dy + 20;
    const g = svg("svg", {id: "tree-svg", width: width, height: height});
    const pos = new Map();
    for (const n of tree) {
      const x = n.parent_id === null ? width / 2 : 10 + (n.branch || 0) * dx;
      pos.set(n.node_id, [x, 15 + (n.depth || 0) * dy]);
    }
    for (const n of tree) {
      if (n.parent_id === null || !pos.has(n.parent_id)) continue;
      const [x1, y1] = pos.get(n.parent_id), [x2, y2] = pos.get(n.node_id);
      g.appendChild(svg("line", {x1: x1, y1: y1, x2: x2, y2: y2, stroke: "#bbb"}));
    }
    for (const n of tree) {
      const [x, y] = pos.get(n.node_id);
      const c = svg("circle", {cx: x, cy: y, r: 7, fill: "#eeeeee", stroke: "#777",
                               "data-node-id": n.node_id, "class": "tree-node"});
      c.dataset.colour = scoreColour(n.score, lo, hi);
      const title = svg("title");
      title.textContent = n.node_id + " score " + fmt(n.score) + " " + n.status + " " + (n.plan || "");
      c.appendChild(title);
      if (n.parent_id === null) { c.setAttribute("fill", c.dataset.colour); c.classList.add("root"); }
      g.appendChild(c);
      circles.set(n.node_id, c);
    }
    holder.replaceChildren(g);
  }

  function render() {
    let revealed = 0;
    for (const c of circles.values()) {
      if (!c.classList.contains("root")) { c.classList.remove("revealed"); c.setAttribute("fill", "#eeeeee"); }
    }
    revealedList.replaceChildren();
    for (const r of data.rounds.slice(0, shown)) {
      for (const id of r.revealed) {
        const c = circles.get(id);
        if (c) { c.classList.add("revealed"); c.setAttribute("fill", c.dataset.colour); }
        revealedList.appendChild(el("li", "round " + r.round + ": " + id));
        revealed += 1;
      }
    }
    roundNo.textContent = String(shown);
    roundNo.nextElementSibling.textContent = String(data.rounds.length);
    count.textContent = String(revealed);
    step.disabled = shown >= data.rounds.length;
  }

  function stopPlay() { if (timer !== null) { clearInterval(timer); timer = null; play.textContent = "Play"; } }

  async function replay() {
    stopPlay();
    const q = new URLSearchParams({policy: spec.value.trim() || select.value});
    if (workers.value) q.set("workers", workers.value);
    if (budget.value) q.set("budget", budget.value);
    result.textContent = "replaying...";
    try {
      data = await api("/api/replay/" + encodeURIComponent(runId) + "?" + q.toString());
    } catch (err) { result.textContent = "Error: " + err.message; return; }
    const r = data.result;
    result.textContent = data.policy + ": V " + fmt(r.value) + ", quality " + fmt(r.quality) +
      ", " + r.revealed + " revealed in " + r.rounds + " round(s), stopped: " + r.stop +
      (data.tree_cut ? " (a tree of " + data.tree_size + " nodes: only the revealed ones are drawn)" : "");
    draw(data.tree);
    shown = 0;
    render();
  }

  load.addEventListener("click", replay);
  step.addEventListener("click", () => { if (data && shown < data.rounds.length) { shown += 1; render(); } });
  reset.addEventListener("click", () => { if (data) { stopPlay(); shown = 0; render(); } });
  play.addEventListener("click", () => {
    if (!data) return;
    if (timer !== null) { stopPlay(); return; }
    play.textContent = "Pause";
    timer = setInterval(() => {
      if (shown >= data.rounds.length) { stopPlay(); return; }
      shown += 1; render();
    }, 500);
  });
  await replay();
})();
