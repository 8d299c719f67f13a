// The no-code editor: GrapesJS with its MJML plugin, started so that it asks no other
// host for anything (no telemetry, no icon stylesheet, no web fonts, no remote samples).
// The design is saved to herald as MJML; herald compiles it, sanitises the HTML and
// answers with the fault's line and column when it does not compile. A broadcast's
// unsubscribe block cannot be removed. Same-origin file, no inline script.
(function () {
  "use strict";
  var root = document.getElementById("designer");
  if (!root || !window.grapesjs || !window["grapesjs-mjml"]) {
    return;
  }
  var kind = root.getAttribute("data-kind");
  var status = document.getElementById("design-status");
  var tags = JSON.parse(root.getAttribute("data-merge-tags") || "[]");
  var UNSUBSCRIBE = "herald-unsubscribe";
  var footer =
    '<mj-section css-class="' + UNSUBSCRIBE + '"><mj-column><mj-text align="center" font-size="12px" color="#78716c">' +
    'You receive this email because you subscribed. <a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a>' +
    "</mj-text></mj-column></mj-section>";
  // A grey box drawn in place of an image until one is chosen: no request anywhere.
  var placeholder =
    "data:image/svg+xml," +
    encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="600" height="240"><rect width="100%" height="100%" fill="#e7e5e4"/><text x="50%" y="50%" fill="#78716c" font-family="sans-serif" font-size="20" text-anchor="middle" dominant-baseline="middle">Image</text></svg>');
  var starter =
    '<mjml><mj-body background-color="#f5f5f4"><mj-section background-color="#ffffff"><mj-column>' +
    '<mj-text font-size="20px" font-weight="600">Hello {{{FIRST_NAME|there}}}</mj-text>' +
    "<mj-text>Write your message here, or drag blocks in from the right.</mj-text>" +
    "</mj-column></mj-section>" + (kind === "broadcast" ? footer : "") + "</mj-body></mjml>";
  var source = document.getElementById("design-source").value.trim() || starter;
  var mjml = window["grapesjs-mjml"];
  mjml = mjml.default || mjml;

  var editor = window.grapesjs.init({
    container: "#gjs",
    height: "100%",
    fromElement: false,
    components: source,
    storageManager: false,
    telemetry: false,
    cssIcons: "",
    assetManager: { upload: false, assets: [] },
    plugins: [
      function (ed) {
        mjml(ed, {
          fonts: {},
          imagePlaceholderSrc: placeholder,
          blocks: ["mj-1-column", "mj-2-columns", "mj-3-columns", "mj-text", "mj-button", "mj-image", "mj-divider", "mj-spacer", "mj-navbar", "mj-navbar-link", "mj-wrapper"],
        });
      },
    ],
  });
  window.heraldEditor = editor;

  function say(words, tone) {
    status.textContent = words;
    status.className = "design-status" + (tone ? " " + tone : "");
  }

  function isFooter(component) {
    var cls = (component.getAttributes() || {})["css-class"] || "";
    return cls.split(/\s+/).indexOf(UNSUBSCRIBE) >= 0;
  }

  // A broadcast keeps its unsubscribe block: it is added when missing, and it and
  // everything in it can be neither removed, copied nor edited away.
  function guardFooter() {
    if (kind !== "broadcast") {
      return;
    }
    var body = editor.getWrapper().find("mj-body")[0];
    if (!body) {
      return;
    }
    var found = body.components().filter(isFooter);
    if (!found.length) {
      found = body.append(footer);
    }
    found.forEach(function (section) {
      section.set({ removable: false, copyable: false, draggable: "mj-body", droppable: false });
      section.onAll(function (inner) {
        inner.set({ removable: false, copyable: false, draggable: false, droppable: false, editable: false });
      });
    });
  }

  if (kind === "template" || kind === "broadcast") {
    editor.Blocks.add("herald-unsubscribe", {
      label: "Unsubscribe",
      category: "herald",
      media: '<svg viewBox="0 0 24 24"><path fill="currentColor" d="M20 4H4a2 2 0 0 0-2 2v12a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2V6a2 2 0 0 0-2-2m0 4-8 5-8-5V6l8 5 8-5z"/></svg>',
      content: footer,
    });
  }

  editor.on("load", guardFooter);
  editor.on("component:remove", function () {
    setTimeout(guardFooter, 0);
  });

  // Merge tags: from the bar's menu, or from a menu in the text toolbar, at the caret.
  function insertTag(tag) {
    var rte = editor.RichTextEditor.globalRte;
    if (!editor.getEditing() || !rte) {
      say("Double-click a text first, then insert the tag where the caret is.", "bad");
      return;
    }
    rte.insertHTML("{{{" + tag + "}}}");
    editor.getEditing().trigger("sync:content");
    say("Inserted {{{" + tag + "}}}.", "good");
  }

  var bar = document.getElementById("design-merge");
  bar.addEventListener("mousedown", function () {
    // Keep the canvas's selection while the menu opens.
    var rte = editor.RichTextEditor.globalRte;
    if (rte && rte.doc) {
      var selection = rte.doc.getSelection();
      bar.savedRange = selection && selection.rangeCount ? selection.getRangeAt(0) : null;
    }
  });
  bar.addEventListener("change", function () {
    if (bar.value) {
      var rte = editor.RichTextEditor.globalRte;
      if (bar.savedRange && rte && rte.doc) {
        var selection = rte.doc.getSelection();
        selection.removeAllRanges();
        selection.addRange(bar.savedRange);
      }
      insertTag(bar.value);
    }
    bar.selectedIndex = 0;
  });

  var menu = document.createElement("select");
  menu.className = "gjs-rte-merge";
  menu.setAttribute("aria-label", "Insert a merge tag");
  [""].concat(tags).forEach(function (tag) {
    var option = document.createElement("option");
    option.value = tag;
    option.textContent = tag || "Merge tag…";
    menu.appendChild(option);
  });
  editor.RichTextEditor.add("herald-merge", {
    icon: menu,
    event: "change",
    result: function (rte, action) {
      var picked = action.btn.querySelector("select") || action.btn;
      if (picked.value) {
        rte.insertHTML("{{{" + picked.value + "}}}");
      }
      picked.selectedIndex = 0;
    },
  });

  // Saving: the MJML to herald, which answers with what it made or where it failed.
  function save() {
    var body = new URLSearchParams();
    body.set("csrf", root.getAttribute("data-csrf"));
    body.set("mjml", editor.getHtml().trim());
    say("Saving…");
    return fetch(root.getAttribute("data-save"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: body.toString(),
    })
      .then(function (response) {
        return response.json().then(function (answer) {
          if (response.ok) {
            say("Saved: " + answer.html_bytes + " bytes of HTML.", "good");
            return true;
          }
          var where = answer.line ? " (line " + answer.line + ", column " + answer.column + ")" : "";
          say(answer.message + where, "bad");
          return false;
        });
      })
      .catch(function () {
        say("Not saved: herald did not answer. Try again.", "bad");
        return false;
      });
  }

  document.getElementById("design-save").addEventListener("click", save);
  var preview = document.getElementById("design-preview");
  if (preview) {
    preview.addEventListener("submit", function (event) {
      event.preventDefault();
      save().then(function (saved) {
        if (saved) {
          preview.submit();
        }
      });
    });
  }
  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      save();
    }
  });
})();
