// What every page shares: building elements with text only, the API, live updates, formats.
// Data from the store (feedback, plans, model answers) is hostile input: it reaches the page
// only as text (text nodes, textContent, attribute values), never as markup.
"use strict";

const D = {};

// An element with attributes and children; strings and numbers become text nodes.
D.el = function (tag, attrs, ...children) {
  const e = document.createElement(tag);
  D.setAttrs(e, attrs);
  D.append(e, children);
  return e;
};

// An SVG element with attributes.
D.svg = function (tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  D.setAttrs(e, attrs);
  D.append(e, children);
  return e;
};

D.setAttrs = function (e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
};

D.append = function (e, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
};

// Text for a value: "" for null, JSON for objects, the string itself otherwise.
D.text = function (value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
};

// Replace a node's children.
D.fill = function (e, ...children) {
  e.replaceChildren();
  D.append(e, children);
  return e;
};

D.api = async function (path) {
  const res = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  let body = null;
  try { body = await res.json(); } catch (err) { body = null; }
  if (!res.ok) {
    const reason = body && typeof body.error === "string" ? body.error : res.statusText;
    throw new Error(reason + " (" + res.status + ")");
  }
  return body;
};

D.showError = function (err) {
  const box = document.getElementById("error");
  if (!box) return;
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  box.hidden = false;
  box.textContent = String(err.message || err);
};

// Call `refresh` when the store changes: server-sent events, or polling /api/version when the
// stream cannot be opened. Calls never overlap; a change during one is run after it.
D.live = function (refresh) {
  let running = false, again = false, last = null;
  const run = async () => {
    if (running) { again = true; return; }
    running = true;
    try { await refresh(); D.showError(null); } catch (err) { D.showError(err); }
    running = false;
    if (again) { again = false; run(); }
  };
  const seen = (version) => {
    if (version === last) return;
    const first = last === null;
    last = version;
    if (!first) run();
  };
  let polling = null;
  const poll = () => {
    if (polling) return;
    polling = setInterval(async () => {
      try { seen((await D.api("/api/version")).version); } catch (err) { /* next time */ }
    }, 2000);
  };
  if (window.EventSource) {
    const source = new EventSource("/api/events");
    source.addEventListener("change", (ev) => {
      try { seen(JSON.parse(ev.data).version); } catch (err) { /* ignore a bad event */ }
    });
    source.onerror = () => { if (source.readyState === EventSource.CLOSED) poll(); };
  } else {
    poll();
  }
  return run();
};

D.params = () => new URLSearchParams(window.location.search);

D.fmt = {
  num(x, digits) {
    if (x === null || x === undefined) return "–";
    if (typeof x !== "number") return D.text(x);
    if (Number.isInteger(x)) return x.toLocaleString("en-US");
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(digits || 3);
    return x.toFixed(digits === undefined ? 4 : digits).replace(/\.?0+$/, "");
  },
  money(x) { return x ? "$" + x.toFixed(4) : "–"; },
  ms(x) { return x === null || x === undefined ? "–" : (x / 1000).toFixed(2) + " s"; },
  time(t) { return t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "–"; },
  short(id) { return id ? String(id).slice(0, 12) : "–"; },
  budget(run) {
    const b = run.budget;
    if (typeof b === "number") return run.attempts + " / " + b;
    return String(run.attempts) + (b ? " / " + D.text(b) : "");
  },
};

// A colour for t in [0, 1] (low: red-brown, high: green), or grey for no score.
D.scoreColour = function (t) {
  if (t === null || t === undefined || Number.isNaN(t)) return "#b9b9b9";
  const stops = [[165, 0, 38], [244, 109, 67], [254, 224, 139], [166, 217, 106], [26, 152, 80]];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return "rgb(" + c.join(",") + ")";
};

// A verdict as a small badge.
D.verdict = function (v) {
  if (!v) return D.el("span", { class: "muted" }, "–");
  const word = v.verdict || D.text(v);
  return D.el("span", { class: "badge verdict-" + String(word).replace(/[^a-z_]/g, "") }, word);
};

D.status = function (s) {
  return D.el("span", { class: "badge status-" + String(s).replace(/[^a-z_]/g, "") }, s);
};

// Paging controls for a list: calls go(offset).
D.pager = function (box, page, go) {
  const end = Math.min(page.total, page.offset + page.items.length);
  D.fill(box,
    D.el("button", { type: "button", disabled: page.offset === 0 ? "disabled" : null,
      onclick: () => go(Math.max(0, page.offset - page.limit)) }, "← newer"),
    D.el("span", { class: "muted" }, " " + (page.total ? page.offset + 1 : 0) + "–" + end +
      " of " + page.total + " "),
    D.el("button", { type: "button", disabled: end >= page.total ? "disabled" : null,
      onclick: () => go(page.offset + page.limit) }, "older →"));
};

// The nav bar, the same on every page (pages of other parts included): <nav id="nav">.
D.PAGES = [["/", "Runs"], ["/curves", "Curves"], ["/ledger", "Ledger"], ["/dreams", "Dreams"],
  ["/survival", "Survival"], ["/repo-runs", "Dream Runs"], ["/lessons", "Lessons"]];
D.nav = function () {
  const nav = document.getElementById("nav");
  if (!nav) return;
  const here = window.location.pathname;
  const links = D.PAGES.map(([href, label]) => {
    const on = href === "/" ? here === "/" || here.startsWith("/runs/") : here.startsWith(href);
    return D.el("a", { href: href, class: on ? "here" : null }, label);
  });
  D.fill(nav, D.el("span", { class: "brand" }, "dreamrsi"), links,
    D.el("span", { class: "live", id: "live" }, "live"));
};
D.nav();
