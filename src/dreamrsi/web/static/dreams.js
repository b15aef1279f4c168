"use strict";
(async () => {
  const main = document.getElementById("main");
  try {
    const q = new URLSearchParams(window.location.search);
    const query = new URLSearchParams({limit: "1000"});
    for (const k of ["task", "loop"]) if (q.get(k)) query.set(k, q.get(k));
    const page = await api("/api/dreams?" + query.toString());
    main.appendChild(el("p", page.total + " dream(s)"));
    main.appendChild(table(page.items, [
      ["dream", r => link("/dreams/" + encodeURIComponent(r.dream_id), r.dream_id)],
      ["task", "task"], ["status", "status"], ["incumbent", "incumbent"],
      ["selected", "selected"], ["promoted", r => r.promoted ? "yes" : "no"],
      ["candidates", "candidates"], ["deployed", r => r.deployed ? "deployed" : ""],
      ["reason", "reason"],
    ]));
  } catch (err) { showError(main, err); }
})();
