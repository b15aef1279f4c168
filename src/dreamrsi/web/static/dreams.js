"use strict";
(() => {
  const main = document.getElementById("main");
  const box = el("div");
  box.id = "dreams";
  main.appendChild(box);
  live(async () => {
    const q = new URLSearchParams(window.location.search);
    const query = new URLSearchParams({limit: "1000"});
    for (const k of ["task", "loop"]) if (q.get(k)) query.set(k, q.get(k));
    let page;
    try { page = await api("/api/dreams?" + query.toString()); }
    catch (err) { box.replaceChildren(); showError(box, err); return; }
    box.replaceChildren(el("p", page.total + " dream(s)"), table(page.items, [
      ["dream", r => link("/dreams/" + encodeURIComponent(r.dream_id), r.dream_id)],
      ["task", "task"], ["status", "status"], ["incumbent", "incumbent"],
      ["selected", "selected"], ["promoted", r => r.promoted ? "yes" : "no"],
      ["candidates", "candidates"], ["deployed", r => r.deployed ? "deployed" : ""],
      ["reason", "reason"],
    ]));
  });
})();
