// swe-srl view: sortable tables, row filters and id search. Written for this project; no dependencies.
// Every value is read from the page's own escaped text or data-* attributes and written back as text only.
"use strict";

function cellValue(row, index) {
  const cell = row.children[index];
  if (!cell) return "";
  const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
  const num = parseFloat(raw);
  return raw !== "" && !isNaN(num) && /^[-+]?[\d.]/.test(raw) ? num : raw.toLowerCase();
}

function makeSortable(table) {
  const body = table.tBodies[0];
  if (!body || !table.tHead) return;
  Array.from(table.tHead.rows[0].cells).forEach((th, index) => {
    th.classList.add("sort");
    th.addEventListener("click", () => {
      const down = th.dataset.dir !== "desc";
      Array.from(table.tHead.rows[0].cells).forEach((other) => { delete other.dataset.dir; });
      th.dataset.dir = down ? "desc" : "asc";
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = cellValue(a, index), y = cellValue(b, index);
        const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return down ? -order : order;
      });
      rows.forEach((row) => body.appendChild(row));
      scrollTails(body);  // moving a row resets its scroll positions
    });
  });
}

function scrollTails(root) {  // cells that show the end of a text (a prompt's) open at that end
  root.querySelectorAll("pre.tail").forEach((pre) => { pre.scrollTop = pre.scrollHeight; });
}

function rowsOf(box) {
  const target = document.getElementById(box.dataset.table);
  if (!target) return [];
  return target.tBodies ? Array.from(target.tBodies[0].rows) : Array.from(target.children);
}

function applyFilters(box) {
  const rows = rowsOf(box);
  const filters = Array.from(box.querySelectorAll("[data-filter]")).map((el) => [el.dataset.filter, el.value.trim()]);
  const searches = Array.from(box.querySelectorAll("[data-search]")).map((el) => [el.dataset.search, el.value.trim().toLowerCase()]);
  let shown = 0;
  rows.forEach((row) => {
    const keep = filters.every(([key, value]) => value === "" || row.dataset[key] === value) &&
      searches.every(([key, value]) => value === "" || (row.dataset[key] || "").toLowerCase().includes(value));
    row.hidden = !keep;
    if (keep) shown += 1;
  });
  const label = box.querySelector(".shown");
  if (label) label.textContent = shown + " of " + rows.length + " shown";
}

function setupFilters(box) {
  const served = window.location.protocol !== "file:";
  if (box.tagName === "FORM" && served) return;  // the server filters the whole file (?instance=&split=&step=)
  box.querySelectorAll("[data-filter], [data-search]").forEach((el) => {
    el.addEventListener(el.tagName === "SELECT" ? "change" : "input", () => applyFilters(box));
  });
  if (box.tagName === "FORM") {  // a static export: the form filters the rows of this page
    box.addEventListener("submit", (event) => { event.preventDefault(); applyFilters(box); });
  }
  applyFilters(box);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll(".filters[data-table]").forEach(setupFilters);
  scrollTails(document);
});
