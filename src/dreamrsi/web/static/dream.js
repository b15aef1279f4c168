"use strict";
(async () => {
  const main = document.getElementById("main");
  const id = lastSegment();
  document.getElementById("title").textContent = "Dream " + id;
  let d;
  try { d = await api("/api/dreams/" + encodeURIComponent(id)); }
  catch (err) { showError(main, err); return; }
  const s = d.selection;
  const sel = section(main, "Selection");
  sel.appendChild(table([s], [
    ["incumbent", "incumbent"], ["selected", "selected"],
    ["promoted", r => r.promoted ? "yes" : "no"], ["compared on", "select_on"],
    ["difference", "difference"], ["interval", r => r.interval ? "[" + r.interval.map(fmt).join(", ") + "]" : ""],
    ["reason", "reason"],
  ]));
  for (const note of s.notes) sel.appendChild(el("p", note));
  if (d.deployed_now) sel.appendChild(el("p", "Deployed now: " + d.deployed_now.policy + " (from dream " + d.deployed_now.dream_id + ")"));
  const cand = section(main, "Candidates");
  cand.id = "candidates";
  cand.appendChild(table(d.candidates, [
    ["policy", "policy"], ["version", "version_id"],
    ["train V", r => r.train && r.train.value], ["holdout V", r => r.holdout && r.holdout.value],
    ["difference", "difference"], ["interval", r => "[" + (r.interval || []).map(fmt).join(", ") + "]"],
  ], r => showPolicy(r.version_id)));
  const hold = section(main, "Holdout");
  hold.appendChild(el("p", d.holdout.holdout_is_train ? "No true holdout (the training trees stand in)." : (d.holdout.trees.length + " held-out tree(s)")));
  hold.appendChild(table([
    {who: "selected", ...(d.holdout.selected || {})}, {who: "incumbent", ...(d.holdout.incumbent || {})},
  ], [["", "who"], ["V", "value"], ["quality", "quality"], ["attempts", "attempts"], ["rounds", "rounds"]]));
  const vers = section(main, "Versions and lineage");
  vers.appendChild(table(d.versions, [
    ["version", "version_id"], ["policy", "policy"], ["parent", "parent_id"],
    ["dream", "dream_id"], ["code", "code_digest"],
  ], r => showPolicy(r.version_id)));
  const detail = el("div");
  detail.id = "policy-detail";
  vers.appendChild(detail);
  const scores = section(main, "Replay scores per tree");
  const ids = d.versions.map(v => v.version_id);
  scores.appendChild(table(d.scores, [
    ["tree", r => link("/replay/" + encodeURIComponent(r.tree_id), r.tree_id)], ["split", "split"],
    ...ids.map(v => [v, r => r[v] ? r[v].value : ""])]));
  if (d.code) {
    const code = section(main, "Code revisions");
    code.appendChild(table(d.code.revisions || [], [["#", "number"], ["status", "status"],
      ["reason", "reason"], ["version", "version_id"], ["train mean", "train_mean"]]));
    for (const r of d.code.revisions || []) if (r.diff) code.appendChild(pre(r.diff));
  }
  async function showPolicy(versionId) {
    detail.replaceChildren(el("h3", "Version " + versionId));
    try {
      const p = await api("/api/policies/" + encodeURIComponent(versionId));
      detail.appendChild(el("p", p.policy));
      detail.appendChild(pre(p.code !== null ? p.code : JSON.stringify(p.params, null, 1)));
      if (p.diff) { detail.appendChild(el("h4", "Diff against " + p.against)); detail.appendChild(pre(p.diff)); }
      detail.appendChild(el("p", "Lineage: " + (p.lineage.map(l => l.version_id).join(" \u2190 ") || "none")));
    } catch (err) { showError(detail, err); }
  }
})();
