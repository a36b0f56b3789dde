(function () {
  // The report's one script (its hash is in the page's Content-Security-Policy; the page reads
  // the same without it): click (or Enter on) a column heading to sort, and open a folded
  // section when a link leads into it or the page is printed.
  // Cells with data-v sort as numbers (empty = unknown, always last); others as text.
  function unknown(cell, numeric) { return numeric && cell.getAttribute("data-v") === ""; }
  function cmp(a, b, numeric) {
    if (numeric) return parseFloat(a.getAttribute("data-v")) - parseFloat(b.getAttribute("data-v"));
    return a.textContent.localeCompare(b.textContent);
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (t) {
    var heads = t.tHead ? t.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th) {
      th.tabIndex = 0;
      function go() {
        var i = th.cellIndex, asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var numeric = rows.length > 0 && rows[0].cells[i].hasAttribute("data-v");
        rows.sort(function (r1, r2) {
          var a = r1.cells[i], b = r2.cells[i], ua = unknown(a, numeric), ub = unknown(b, numeric);
          if (ua || ub) return ua === ub ? 0 : (ua ? 1 : -1);  // unknown values stay last
          var c = cmp(a, b, numeric);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") go(); });
    });
  });
  document.documentElement.setAttribute("data-sortable", String(tables.length));

  // A link's target inside folded sections: open every <details> around it, and its own.
  function reveal(hash) {
    var id = hash.slice(1);
    try { id = decodeURIComponent(id); } catch (e) { /* a literal % in an id */ }
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var n = target; n; n = n.parentElement) if (n.tagName === "DETAILS") n.open = true;
    var own = target.firstElementChild;
    if (own && own.tagName === "DETAILS") own.open = true;
  }
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[href^='#']") : null;
    if (a) reveal(a.getAttribute("href"));  // before the browser scrolls to it
  });
  window.addEventListener("hashchange", function () { reveal(location.hash); });
  if (location.hash) reveal(location.hash);  // the browser scrolls to it once the page has loaded
  // Printing shows everything; what was folded folds again afterwards.
  var folded = [];
  window.addEventListener("beforeprint", function () {
    folded = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    folded.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    folded.forEach(function (d) { d.open = false; });
    folded = [];
  });
  document.documentElement.setAttribute("data-folds", String(document.querySelectorAll("details.section").length));
})();
