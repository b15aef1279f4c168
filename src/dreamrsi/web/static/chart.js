// Small SVG charts drawn by hand: step lines with bands, and bars. No chart library.
"use strict";

D.PALETTE = ["#2f5fb3", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#1098ad", "#5c940d",
  "#e67700", "#495057", "#a61e4d"];

D.ticks = function (lo, hi, count) {
  if (!(hi > lo)) { hi = lo + 1; }
  const raw = (hi - lo) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
};

function frame(box, opts, xs, ys) {
  const W = opts.width || 640, H = opts.height || 300, m = { l: 64, r: 16, t: 12, b: 40 };
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) { x1 = x0 + 1; }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
  const sx = (x) => m.l + (x - x0) / (x1 - x0) * (W - m.l - m.r);
  const sy = (y) => H - m.b - (y - y0) / (y1 - y0) * (H - m.t - m.b);
  const svg = D.svg("svg", { class: "chart", width: W, height: H, viewBox: "0 0 " + W + " " + H });
  for (const t of D.ticks(y0, y1, 5)) {
    svg.append(D.svg("line", { class: "grid", x1: m.l, x2: W - m.r, y1: sy(t), y2: sy(t) }),
      D.svg("text", { x: m.l - 6, y: sy(t) + 4, "text-anchor": "end" }, D.fmt.num(t, 3)));
  }
  for (const t of D.ticks(x0, x1, 6)) {
    svg.append(D.svg("text", { x: sx(t), y: H - m.b + 16, "text-anchor": "middle" }, D.fmt.num(t, 3)));
  }
  svg.append(D.svg("line", { class: "axis", x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b }),
    D.svg("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: H - m.b }),
    D.svg("text", { x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle" }, opts.xLabel || ""),
    D.svg("text", { x: 12, y: (m.t + H - m.b) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")" }, opts.yLabel || ""));
  D.fill(box, svg);
  return { svg, sx, sy, x1 };
}

// Step lines (best so far holds until the next step), each optionally with a band.
D.lineChart = function (box, opts) {
  const series = opts.series.filter((s) => s.points.length || (s.band && s.band.length));
  if (!series.length) { D.fill(box, D.el("p", { class: "muted" }, "no scored attempts yet")); return; }
  const xs = [], ys = [];
  for (const s of series) {
    for (const [x, y] of s.points) { xs.push(x); ys.push(y); }
    for (const [x, lo, hi] of s.band || []) { xs.push(x); ys.push(lo, hi); }
  }
  const { svg, sx, sy, x1 } = frame(box, opts, xs, ys);
  series.forEach((s, i) => {
    const colour = s.colour || D.PALETTE[i % D.PALETTE.length];
    if (s.band && s.band.length) {
      const top = [], bottom = [];
      s.band.forEach(([x, lo, hi], k) => {
        const next = k + 1 < s.band.length ? s.band[k + 1][0] : x1;
        top.push([sx(x), sy(hi)], [sx(next), sy(hi)]);
        bottom.push([sx(x), sy(lo)], [sx(next), sy(lo)]);
      });
      const pts = top.concat(bottom.reverse()).map((p) => p.join(",")).join(" ");
      svg.append(D.svg("polygon", { class: "band", points: pts, fill: colour }));
    }
    if (s.points.length) {
      let d = "";
      s.points.forEach(([x, y], k) => {
        d += (k ? " H" + sx(x) + " V" : "M" + sx(x) + " ") + sy(y);
      });
      d += " H" + sx(Math.max(x1, s.points[s.points.length - 1][0]));
      svg.append(D.svg("path", { class: "series", d: d, stroke: colour, "data-label": s.label }));
    }
  });
  const legend = D.el("div", { class: "legend" }, series.map((s, i) =>
    D.el("span", { style: null }, D.el("b", { class: "swatch" }, "■ "), s.label)));
  legend.querySelectorAll("b.swatch").forEach((b, i) => {
    b.style.color = series[i].colour || D.PALETTE[i % D.PALETTE.length];
  });
  box.append(legend);
};

// Bars: [[label, value], ...].
D.barChart = function (box, opts) {
  const bars = opts.bars;
  if (!bars.length) { D.fill(box, D.el("p", { class: "muted" }, "no attempts yet")); return; }
  const W = opts.width || 640, H = opts.height || 200, m = { l: 48, r: 10, t: 10, b: 34 };
  const top = Math.max(...bars.map((b) => b[1]), 1);
  const bw = (W - m.l - m.r) / bars.length;
  const sy = (v) => H - m.b - v / top * (H - m.t - m.b);
  const svg = D.svg("svg", { class: "chart", width: W, height: H, viewBox: "0 0 " + W + " " + H });
  for (const t of D.ticks(0, top, 4)) {
    svg.append(D.svg("line", { class: "grid", x1: m.l, x2: W - m.r, y1: sy(t), y2: sy(t) }),
      D.svg("text", { x: m.l - 6, y: sy(t) + 4, "text-anchor": "end" }, D.fmt.num(t)));
  }
  const every = Math.ceil(bars.length / 20);
  bars.forEach(([label, v], i) => {
    svg.append(D.svg("rect", { class: "bar", x: m.l + i * bw + bw * 0.1, y: sy(v),
      width: Math.max(1, bw * 0.8), height: H - m.b - sy(v) }, D.svg("title", null, label + ": " + v)));
    if (i % every === 0) {
      svg.append(D.svg("text", { x: m.l + (i + 0.5) * bw, y: H - m.b + 14, "text-anchor": "middle" }, label));
    }
  });
  svg.append(D.svg("text", { x: (m.l + W - m.r) / 2, y: H - 4, "text-anchor": "middle" }, opts.xLabel || ""));
  D.fill(box, svg);
};

// A curve's points on one axis: [[x, best], ...].
D.curvePoints = (curve, axis) => curve.points.filter((p) => p.best !== null).map((p) => [p[axis], p.best]);
D.AXIS_LABEL = { attempts: "cumulative attempts", tokens: "tokens (in + out)", money_usd: "money (USD)" };
