// Several runs and loops overlaid; loops of one arm as a band over their seeds.
"use strict";

(function () {
  const q = D.params();
  const runs = q.getAll("run"), loops = q.getAll("loop");
  const axisBox = document.getElementById("axis");
  axisBox.value = q.get("axis") || "attempts";
  document.getElementById("runs-in").value = runs.join(" ");
  document.getElementById("loops-in").value = loops.join(" ");
  document.getElementById("pick").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const out = new URLSearchParams();
    for (const r of document.getElementById("runs-in").value.split(/\s+/).filter(Boolean)) out.append("run", r);
    for (const l of document.getElementById("loops-in").value.split(/\s+/).filter(Boolean)) out.append("loop", l);
    out.set("axis", axisBox.value);
    window.location.search = out.toString();
  });
  axisBox.addEventListener("change", () => document.getElementById("pick").requestSubmit());

  async function refresh() {
    if (!runs.length && !loops.length) return;
    const query = new URLSearchParams();
    runs.forEach((r) => query.append("run", r));
    loops.forEach((l) => query.append("loop", l));
    query.set("axis", axisBox.value);
    const data = await D.api("/api/curves?" + query.toString());
    const axis = axisBox.value;
    const series = data.runs.map((c) => ({ label: c.run_id + " · " + c.policy, points: D.curvePoints(c, axis) }));
    const byArm = data.arms.filter((a) => a.loops.length > 1);
    const banded = new Set(byArm.flatMap((a) => a.loops));
    for (const c of data.loops) {
      if (!banded.has(c.loop_id)) series.push({ label: c.loop_id + " · " + c.arm, points: D.curvePoints(c, axis) });
    }
    for (const a of byArm) {
      series.push({ label: a.arm + " (mean of " + a.loops.length + " seeds, band: lowest–highest)",
        points: a.points.map((p) => [p.x, p.mean]), band: a.points.map((p) => [p.x, p.lo, p.hi]) });
    }
    D.lineChart(document.getElementById("chart"), { series, xLabel: D.AXIS_LABEL[axis], yLabel: "best score", width: 900, height: 380 });
    const rounds = data.loops.length ? data.loops[0] : data.runs[0];
    if (rounds) D.barChart(document.getElementById("rounds"), { xLabel: "round of " + (rounds.loop_id || rounds.run_id),
      bars: rounds.rounds.map((r) => [String(r.round), r.attempts]) });
  }
  D.live(refresh);
})();
