// The pages of dreams, replay, survival, Dream Runs and lessons share these helpers. Data from
// the store reaches the page only through textContent and setAttribute: never as markup.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

async function api(url) {
  const res = await fetch(url, {headers: {"Accept": "application/json"}});
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    throw new Error(body.error || body.detail || ("HTTP " + res.status));
  }
  return body;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function fmt(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// A table of rows; columns are [heading, key or function(row) -> text or Node].
function table(rows, columns, onClick) {
  const t = el("table", null, "panel-table");
  const head = t.createTHead().insertRow();
  for (const [name] of columns) head.appendChild(el("th", name));
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [, key] of columns) {
      const value = typeof key === "function" ? key(row) : row[key];
      const td = tr.insertCell();
      if (value instanceof Node) td.appendChild(value); else td.textContent = fmt(value);
    }
    if (onClick) { tr.classList.add("clickable"); tr.addEventListener("click", () => onClick(row)); }
  }
  return t;
}

function link(href, text) {
  const a = el("a", text);
  a.setAttribute("href", href);
  return a;
}

function section(parent, title) {
  const s = el("section");
  s.appendChild(el("h2", title));
  parent.appendChild(s);
  return s;
}

function pre(text) { return el("pre", text, "panel-pre"); }

function showError(parent, err) {
  parent.appendChild(el("p", "Error: " + err.message, "error"));
}

// The last path segment (an id), decoded.
function lastSegment() {
  const parts = window.location.pathname.split("/").filter(Boolean);
  return decodeURIComponent(parts[parts.length - 1] || "");
}

// A colour from red (low) to green (high) for a score within [lo, hi].
function scoreColour(score, lo, hi) {
  if (score === null || score === undefined) return "#999999";
  const t = hi > lo ? (score - lo) / (hi - lo) : 1;
  const r = Math.round(220 - 170 * t), g = Math.round(60 + 150 * t);
  return "rgb(" + r + "," + g + ",80)";
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

// Run `refresh` now and again whenever the store changes (the dashboard's live signal, from
// common.js), or once where that is not loaded.
function live(refresh) {
  // common.js's `const D` is a global binding, not a property of window
  if (typeof D !== "undefined" && typeof D.live === "function") return D.live(refresh);
  return refresh();
}
