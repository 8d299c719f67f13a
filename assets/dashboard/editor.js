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
  var footerColumn =
    '<mj-column><mj-text align="center" font-size="12px" color="#78716c">' +
    'You receive this email because you subscribed. <a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a>' +
    "</mj-text></mj-column>";
  var footer = '<mj-section css-class="' + UNSUBSCRIBE + '">' + footerColumn + "</mj-section>";
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
    // The team's images; a file dropped or chosen in the asset manager is uploaded to
    // herald, which serves it from its public address.
    assetManager: {
      assets: JSON.parse(root.getAttribute("data-images") || "[]"),
      upload: root.getAttribute("data-upload"),
      multiUpload: true,
      uploadFile: function (event) {
        var files = (event.dataTransfer || event.target).files || [];
        Array.prototype.forEach.call(files, upload);
      },
    },
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

  // GrapesJS's own panel buttons name Font Awesome classes, whose stylesheet is not
  // loaded (it would come from a CDN): they get plain SVG drawings instead.
  var line = 'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"';
  var icons = {
    "sw-visibility": '<rect x="4" y="4" width="16" height="16" rx="1" ' + line + ' stroke-dasharray="3 2.5"/>',
    preview: '<path ' + line + ' d="M2 12s4-7 10-7 10 7 10 7-4 7-10 7S2 12 2 12z"/><circle cx="12" cy="12" r="3" fill="currentColor"/>',
    fullscreen: '<path ' + line + ' d="M4 9V4h5M20 9V4h-5M4 15v5h5M20 15v5h-5"/>',
    "export-template": '<path ' + line + ' d="M8 7l-5 5 5 5M16 7l5 5-5 5"/>',
    "open-sm": '<path ' + line + ' d="M15 4l5 5-9 9H6v-5zM13 6l5 5"/>',
    "open-tm": '<path ' + line + ' d="M4 7h16M4 17h16"/><circle cx="9" cy="7" r="2.5" fill="currentColor"/><circle cx="15" cy="17" r="2.5" fill="currentColor"/>',
    "open-layers": '<path ' + line + ' d="M12 3l9 5-9 5-9-5zM3 13l9 5 9-5"/>',
    "open-blocks": '<rect x="3" y="3" width="7.5" height="7.5" rx="1.5" fill="currentColor"/><rect x="13.5" y="3" width="7.5" height="7.5" rx="1.5" fill="currentColor"/><rect x="3" y="13.5" width="7.5" height="7.5" rx="1.5" fill="currentColor"/><rect x="13.5" y="13.5" width="7.5" height="7.5" rx="1.5" fill="currentColor"/>',
  };
  editor.Panels.getPanels().forEach(function (panel) {
    panel.get("buttons").forEach(function (button) {
      var drawing = icons[button.id];
      if (drawing) {
        button.set({ className: "herald-icon", label: '<svg viewBox="0 0 24 24">' + drawing + "</svg>" });
      }
    });
  });

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
    var body = editor.getWrapper().findType("mj-body")[0];
    if (!body) {
      return;
    }
    var found = body.components().filter(isFooter);
    if (!found.length) {
      found = body.append(footer);
    }
    found.forEach(function (section) {
      if (section.toHTML().indexOf("RESEND_UNSUBSCRIBE_URL") < 0) {
        // Emptied by a script: the link comes back.
        section.components(footerColumn);
      }
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

  editor.on("load", function () {
    guardFooter();
    var blocks = editor.Panels.getButton("views", "open-blocks");
    if (blocks) {
      blocks.set("active", true);
    }
  });
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

  // The caret in the text being edited, kept as it moves: choosing from the bar's menu
  // takes the focus out of the canvas, and the caret must be where the tag goes.
  var caret = null;
  editor.on("load", function () {
    var doc = editor.Canvas.getDocument();
    // Kept on what a person does in the text (keys, clicks, typing), not on every
    // selection change: leaving the canvas for the menu may move the selection.
    // Kept as a count of characters into the text: the text's nodes may be made anew
    // (GrapesJS syncs the content when the canvas loses the focus), a Range would not
    // survive that.
    function keep() {
      var selection = doc.getSelection();
      if (selection && selection.rangeCount) {
        var range = selection.getRangeAt(0);
        var node = range.startContainer;
        var el = node.nodeType === 1 ? node : node.parentElement;
        var editable = el && el.closest("[contenteditable=true]");
        if (editable) {
          var before = doc.createRange();
          before.setStart(editable, 0);
          before.setEnd(range.endContainer, range.endOffset);
          caret = before.toString().length;
        }
      }
    }
    ["keyup", "mouseup", "input"].forEach(function (type) {
      doc.addEventListener(type, keep);
    });
  });
  editor.on("rte:disable", function () {
    caret = null;
  });

  // A collapsed range `offset` characters into `el`'s text (its end if shorter).
  function at(doc, el, offset) {
    var walker = doc.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    var range = doc.createRange();
    var node;
    var last = null;
    while ((node = walker.nextNode())) {
      if (offset <= node.length) {
        range.setStart(node, offset);
        range.collapse(true);
        return range;
      }
      offset -= node.length;
      last = node;
    }
    if (last) {
      range.setStart(last, last.length);
    } else {
      range.selectNodeContents(el);
    }
    range.collapse(false);
    return range;
  }

  var bar = document.getElementById("design-merge");
  bar.addEventListener("change", function () {
    if (bar.value) {
      var rte = editor.RichTextEditor.globalRte;
      var editing = editor.getEditing();
      var el = editing && editing.getEl();
      if (el && !el.matches("[contenteditable=true]")) {
        el = el.querySelector("[contenteditable=true]");
      }
      if (caret !== null && rte && rte.doc && el) {
        var selection = rte.doc.getSelection();
        selection.removeAllRanges();
        selection.addRange(at(rte.doc, el, caret));
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

  // herald's JSON answer; a refusal before the request was read (a role, an expired
  // form) is text, which becomes the message.
  function answerOf(response, failed) {
    return response.text().then(function (body) {
      try {
        return JSON.parse(body);
      } catch (notJson) {
        return { message: body || failed + " (" + response.status + ")." };
      }
    });
  }

  // Removing an image from the asset manager removes it from herald, once confirmed:
  // emails already sent that show it then show it broken. Asked before GrapesJS's own
  // handler sees the click, so a "no" leaves the image where it was.
  document.addEventListener(
    "click",
    function (event) {
      var button = event.target.closest && event.target.closest("[data-toggle=asset-remove]");
      if (button && !window.confirm("Remove this image from herald? Emails already sent that show it will show it broken.")) {
        event.stopPropagation();
        event.preventDefault();
      }
    },
    true
  );
  editor.on("asset:remove", function (asset) {
    var src = asset.get("src") || "";
    var file = src.split("/images/")[1];
    if (!file) {
      return;
    }
    say("Removing " + (asset.get("name") || "the image") + "…");
    fetch(root.getAttribute("data-upload") + "/" + encodeURIComponent(file.split(".")[0]) + "/delete", {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": root.getAttribute("data-csrf") },
    })
      .then(function (response) {
        return answerOf(response, "Not removed").then(function (answer) {
          if (response.ok) {
            say("Removed " + (asset.get("name") || "the image") + ".", "good");
          } else {
            editor.AssetManager.add(asset.toJSON());
            say("Not removed: " + answer.message, "bad");
          }
        });
      })
      .catch(function () {
        editor.AssetManager.add(asset.toJSON());
        say("Not removed: herald did not answer. Try again.", "bad");
      });
  });

  // One image to herald: the body is the file, the form's token rides in a header.
  function upload(file) {
    say("Uploading " + file.name + "…");
    fetch(root.getAttribute("data-upload"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": file.type || "application/octet-stream",
        "X-CSRF-Token": root.getAttribute("data-csrf"),
        "X-File-Name": encodeURIComponent(file.name),
      },
      body: file,
    })
      .then(function (response) {
        return answerOf(response, "Not uploaded").then(function (answer) {
          if (response.ok) {
            editor.AssetManager.add(answer.data);
            say("Uploaded " + file.name + ": pick it to place it.", "good");
          } else {
            say(file.name + ": " + answer.message, "bad");
          }
        });
      })
      .catch(function () {
        say("Not uploaded: herald did not answer. Try again.", "bad");
      });
  }

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
        return answerOf(response, "Not saved").then(function (answer) {
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
