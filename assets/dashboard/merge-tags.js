// Merge-tag menus: a <select data-insert-into="#field"> puts {{{NAME}}} at the cursor of
// that field, then returns to its prompt. Same-origin file, no inline script.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var menu = event.target.closest("select[data-insert-into]");
    if (!menu || !menu.value) {
      return;
    }
    var field = document.querySelector(menu.getAttribute("data-insert-into"));
    if (field) {
      var tag = "{{{" + menu.value + "}}}";
      var start = field.selectionStart || 0;
      var end = field.selectionEnd || start;
      field.value = field.value.slice(0, start) + tag + field.value.slice(end);
      field.focus();
      field.selectionStart = field.selectionEnd = start + tag.length;
    }
    menu.selectedIndex = 0;
  });
})();
