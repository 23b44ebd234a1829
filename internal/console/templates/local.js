// Optional: shows each time in the browser's zone too (every page works without it).
document.querySelectorAll("time[datetime]").forEach(function (t) {
  var d = new Date(t.getAttribute("datetime"));
  if (!isNaN(d)) { t.title = d.toLocaleString() + " (your zone)"; }
});
