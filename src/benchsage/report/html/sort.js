(function () {
  // Click (or Enter on) a column heading to sort; the table is plain HTML without this.
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
})();
