// The Metrics page counts days and hours in the viewer's time zone: without a `tz` in the
// address, ask again with the browser's. Nothing else runs; without scripts the page
// shows UTC.
(function () {
  "use strict";
  var url = new URL(window.location.href);
  if (url.searchParams.has("tz")) {
    return;
  }
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone && zone !== "UTC") {
    url.searchParams.set("tz", zone);
    window.location.replace(url.toString());
  }
})();
