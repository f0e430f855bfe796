// Select-all for the review queue (a static file: the Content-Security-Policy allows no inline script).
document.addEventListener("DOMContentLoaded", function () {
  var all = document.getElementById("select-all");
  if (!all) { return; }
  all.addEventListener("change", function (e) {
    document.querySelectorAll("input.pick").forEach(function (box) { box.checked = e.target.checked; });
  });
});
