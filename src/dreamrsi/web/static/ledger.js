// A ledger chain's rows, filtered by actor and paged, with its head and its check.
"use strict";

(function () {
  const q = D.params();
  let chain = q.get("chain") || "", kind = q.get("kind") || "", offset = 0;
  const chainBox = document.getElementById("chain"), kindBox = document.getElementById("kind");
  kindBox.value = kind;

  async function chains() {
    const runs = await D.api("/api/runs?limit=500");
    D.fill(chainBox, runs.items.map((r) => D.el("option", { value: r.run_id }, r.run_id + " · " + r.task)));
    if (!chain && runs.items.length) chain = runs.items[0].run_id;
    if (chain) chainBox.value = chain;
  }

  async function refresh() {
    if (!chain) { D.fill(document.getElementById("head"), D.el("dd", null, "no runs yet")); return; }
    const page = await D.api("/api/ledger/" + encodeURIComponent(chain) + "?offset=" + offset +
      "&limit=100" + (kind ? "&kind=" + encodeURIComponent(kind) : ""));
    D.fill(document.getElementById("head"),
      D.el("dt", null, "chain"), D.el("dd", null, page.chain),
      D.el("dt", null, "head"), D.el("dd", null, page.head.length + " " + page.head.hash));
    D.fill(document.querySelector("#rows tbody"), page.items.map((r) => D.el("tr", null,
      D.el("td", { class: "num" }, r.seq), D.el("td", { class: "muted" }, r.t), D.el("td", null, r.actor),
      D.el("td", null, r.cmd), D.el("td", { class: "num" }, D.text(r.exit)), D.el("td", null, D.fmt.short(r.node_id)),
      D.el("td", { class: "num" }, D.text(r.duration_ms)), D.el("td", null, r.admissible ? "yes" : "no"),
      D.el("td", null, r.error || ""), D.el("td", { class: "muted" }, D.fmt.short(r.hash)))));
    D.pager(document.getElementById("pager"), page, (o) => { offset = o; refresh().catch(D.showError); });
  }

  document.getElementById("pick").addEventListener("submit", (ev) => {
    ev.preventDefault();
    chain = document.getElementById("chain-id").value.trim() || chainBox.value;
    kind = kindBox.value; offset = 0;
    const url = new URLSearchParams({ chain });
    if (kind) url.set("kind", kind);
    history.replaceState(null, "", "/ledger?" + url.toString());
    D.fill(document.getElementById("verdict"));
    refresh().catch(D.showError);
  });
  document.getElementById("verify").addEventListener("click", async () => {
    const box = document.getElementById("verdict");
    D.fill(box, D.el("span", { class: "muted" }, "verifying …"));
    try {
      const v = await D.api("/api/ledger/" + encodeURIComponent(chain) + "/verify");
      D.fill(box, v.ok ? D.el("span", { class: "badge verdict-survived", id: "verify-ok" }, "ok: " + v.rows + " rows, " + v.nodes + " nodes")
        : D.el("span", { class: "badge verdict-failed", id: "verify-bad" }, "problem at seq " + D.text(v.bad_seq) + ": " + D.text(v.problem)));
    } catch (err) { D.fill(box, err.message); }
  });
  chains().then(() => D.live(refresh)).catch(D.showError);
})();
