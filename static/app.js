// Tokenplay: only what htmx cannot do on its own.
// - the ids of each view: the server sends them once, as plain text; they are handed out here to the token spans
//   (data-ids), which are numbered (data-seg), and shown as one linked, coloured span per id (in a closed
//   <details>, once it opens);
// - hovering or focusing a token highlights its ids (and the other way round): elements sharing data-seg inside
//   the same [data-token-scope] container (one view of one result; elsewhere nothing happens);
// - the token detail (ids, bytes in hex, text) in the scope's [data-token-detail] element on hover or focus,
//   built with textContent only;
// - arrow keys move focus between tokens (only the first token is in the Tab order);
// - a short summary of each update goes to the #announce status region (screen readers);
// - "Copy all ids" fetches every id (the page shows a window for very long texts) and copies them;
// - a unigram lattice's grid places, from its data attributes (no style attribute: the Content-Security-Policy);
// - explaining a token: a click on it (or Enter on it) inside a .tokens[data-explain] view fills in the form that
//   data-explain names (the token's index, its character offset, the view's tokenizer) and submits it; htmx
//   swaps the explanation in. The explained token is marked (class "explained").
// The text area is never swapped by htmx, so its caret and scroll position stay as they are.
// htmx's own settings are in the htmx-config meta of base.html: swap 4xx/5xx answers so error messages show, and
// settle at once (no 20 ms delay), so a control swapped in (the lab's step slider) works from the moment it shows.
(function () {
  "use strict";

  // A token span: a direct child of a view's .tokens container (templates/_tokens.html).
  const TOKEN = ".tokens > span";

  let lit = [];

  function highlight(scope, seg) {
    for (const el of lit) el.classList.remove("hl");
    lit = [];
    if (seg == null || !scope) return;
    lit = Array.from(scope.querySelectorAll('[data-seg="' + CSS.escape(seg) + '"]'));
    for (const el of lit) el.classList.add("hl");
  }

  function span(cls, text) {
    const el = document.createElement("span");
    el.className = cls;
    el.textContent = text;
    return el;
  }

  const utf8 = new TextEncoder();

  function utf8Hex(text) {
    return Array.from(utf8.encode(text), function (b) {
      return b.toString(16).toUpperCase().padStart(2, "0");
    }).join(" ");
  }

  function showDetail(scope, tok) {
    const box = scope.querySelector("[data-token-detail]");
    if (!box || !tok) return;
    const ids = (tok.dataset.ids || "").split(" ").filter(Boolean);
    // data-hex is only sent where the bytes are not the text's own UTF-8; otherwise derive them here.
    const hexes = tok.dataset.hex != null ? tok.dataset.hex.split("|") : [utf8Hex(tok.textContent)];
    const parts = [span("d-text", JSON.stringify(tok.textContent))];
    if (tok.classList.contains("special")) parts.push(span("d-tag", "special token"));
    if (ids.length > 1) parts.push(span("d-tag", ids.length + " tokens, one group of whole characters"));
    ids.forEach(function (id, i) {
      const t = span("d-tok", "");
      t.append(span("d-id", "id " + id), " ", span("d-hex", hexes[i] || ""));
      parts.push(t);
    });
    // Spaces between the parts keep the detail readable when copied or read aloud.
    box.replaceChildren(...parts.flatMap(function (p, i) { return i ? [" ", p] : [p]; }));
    if (!tok.title) tok.title = box.textContent; // the native tooltip too, built on first hover, not sent
  }

  function tokenFor(scope, el) {
    if (el.matches(TOKEN)) return el;
    return scope.querySelector(TOKEN + '[data-seg="' + CSS.escape(el.dataset.seg) + '"]');
  }

  function linked(event) {
    const el = event.target instanceof Element && event.target.closest("[data-token-scope] [data-seg]");
    return el ? [el, el.closest("[data-token-scope]")] : [null, null];
  }

  function onEnter(event) {
    const [el, scope] = linked(event);
    if (!el) return;
    highlight(scope, el.dataset.seg);
    showDetail(scope, tokenFor(scope, el));
  }

  function onLeave(event) {
    const [el] = linked(event);
    if (el && !(event.relatedTarget instanceof Node && el.contains(event.relatedTarget))) highlight(null, null);
  }

  document.addEventListener("mouseover", onEnter);
  document.addEventListener("focusin", onEnter);
  document.addEventListener("mouseout", onLeave);
  document.addEventListener("focusout", onLeave);

  document.addEventListener("keydown", function (event) {
    const tok = event.target instanceof Element && event.target.closest(TOKEN + "[tabindex]");
    if (!tok) return;
    if ((event.key === "Enter" || event.key === " ") && explainable(tok)) {
      event.preventDefault();
      explain(tok, null);
      return;
    }
    let next = null;
    if (event.key === "ArrowRight" || event.key === "ArrowDown") next = tok.nextElementSibling;
    else if (event.key === "ArrowLeft" || event.key === "ArrowUp") next = tok.previousElementSibling;
    else if (event.key === "Home") next = tok.parentElement.firstElementChild;
    else if (event.key === "End") next = tok.parentElement.lastElementChild;
    else return;
    event.preventDefault();
    if (next) next.focus();
  });

  // The server sends each window's ids once, as plain text ([data-id-list]); here they are handed out to the
  // token spans of the same scope, in order: one for a span without data-hex, one per data-hex entry for a span
  // of several tokens, none for a gap. Each span gets its ids (data-ids) and its number (data-seg), and the list
  // becomes one linked, coloured span per id. The token spans after a focusable first one (tabindex 0) get
  // tabindex -1 here too, so arrow keys and clicks can focus them.
  function colourOf(tok) {
    for (const c of tok.classList) if (/^c\d+$/.test(c)) return c;
    return "";
  }

  function tokenCount(tok) {
    if (tok.classList.contains("gap")) return 0;
    return tok.dataset.hex != null ? tok.dataset.hex.split("|").length : 1;
  }

  // -- explaining a token ------------------------------------------------------------------------------------
  function explainable(tok) {
    return tok.parentElement && tok.parentElement.matches(".tokens[data-explain]") && !tok.classList.contains("gap");
  }

  // The index of a span's first token: the view's first token (data-first-token) and the tokens of the spans
  // before it (the hex entries count them, as in enhance()).
  function tokenIndex(tok) {
    let index = Number(tok.parentElement.dataset.firstToken || 0);
    for (let t = tok.previousElementSibling; t; t = t.previousElementSibling) index += tokenCount(t);
    return index;
  }

  function codePoints(text) {
    return Array.from(text).length; // the server counts characters, JavaScript UTF-16 units
  }

  // The character offset of a span's start (the view's spans tile the text from its first character,
  // data-first-char, 0 unless the view is a later window), or of a cut mark inside it (compare: where the
  // reference cuts).
  function charOffset(tok, cut) {
    let at = Number(tok.parentElement.dataset.firstChar || 0);
    for (let t = tok.previousElementSibling; t; t = t.previousElementSibling) at += codePoints(t.textContent);
    if (cut) {
      for (let n = tok.firstChild; n && n !== cut; n = n.nextSibling) at += codePoints(n.textContent);
    }
    return at;
  }

  function setField(form, name, value) {
    const field = form.elements.namedItem(name);
    if (field && value != null) field.value = value;
  }

  function markExplained(view, index) {
    for (const old of view.querySelectorAll(".explained")) {
      old.classList.remove("explained");
      old.removeAttribute("aria-current");
    }
    if (index === "" || index == null) return;
    let at = Number(view.dataset.firstToken || 0);
    for (const tok of view.children) {
      const n = tokenCount(tok);
      if (Number(index) >= at && Number(index) < at + n) {
        tok.classList.add("explained");
        tok.setAttribute("aria-current", "true");
        return;
      }
      at += n;
    }
  }

  // The views that show the token a form explains: every view the form serves, or, when the form names the pane
  // that was clicked (compare: the same index is another token of another tokenizer), that pane's view only.
  function explainedViews(form) {
    const pane = form && form.elements.namedItem("pane");
    const name = pane ? pane.value : "";
    return Array.from(document.querySelectorAll(".tokens[data-explain][data-first-token]")).filter(function (view) {
      if (document.querySelector(view.dataset.explain) !== form) return false;
      const owner = name ? view.closest("[data-tokenizer]") : null;
      return !owner || owner.dataset.tokenizer === name;
    });
  }

  function markExplainedViews(form, index) {
    const marked = explainedViews(form);
    for (const view of document.querySelectorAll(".tokens[data-explain][data-first-token]")) {
      if (document.querySelector(view.dataset.explain) === form) markExplained(view, marked.includes(view) ? index : "");
    }
  }

  function explain(tok, cut) {
    const view = tok.parentElement;
    const form = document.querySelector(view.dataset.explain);
    if (!form || !window.htmx) return;
    const index = tokenIndex(tok);
    const pane = tok.closest("[data-tokenizer]");
    if (!cut && tok.classList.contains("diff-missing")) cut = tok.querySelector(".cut");
    setField(form, "explain", String(index));
    setField(form, "at", String(charOffset(tok, cut)));
    setField(form, "pane", pane ? pane.dataset.tokenizer : null);
    for (const other of document.querySelectorAll(".tokens[data-explain] .explained")) {
      other.classList.remove("explained");
      other.removeAttribute("aria-current");
    }
    markExplained(view, index);
    htmx.trigger(form, "submit");
  }

  document.addEventListener("click", function (event) {
    const el = event.target instanceof Element ? event.target : null;
    const close = el && el.closest("[data-explain-close]");
    if (close) {
      const form = document.querySelector(close.dataset.explainClose);
      if (!form || !window.htmx) return;
      setField(form, "explain", "");
      for (const view of document.querySelectorAll(".tokens[data-explain]")) markExplained(view, "");
      htmx.trigger(form, "submit");
      return;
    }
    const other = el && el.closest("[data-explain] [data-explain-index]");
    if (other) {
      // another token of the explained pre-token (buttons in the explanation, keyboard-usable too)
      const form = document.querySelector(other.closest("[data-explain]").dataset.explain);
      if (!form || !window.htmx) return;
      setField(form, "explain", other.dataset.explainIndex);
      markExplainedViews(form, other.dataset.explainIndex);
      htmx.trigger(form, "submit");
      return;
    }
    const tok = el && el.closest(TOKEN);
    if (tok && explainable(tok)) explain(tok, el.matches(".cut") ? el : null);
  });

  function enhance(root) {
    for (const first of root.querySelectorAll(TOKEN + '[tabindex="0"]')) {
      for (let t = first.nextElementSibling; t; t = t.nextElementSibling) {
        if (!t.hasAttribute("tabindex")) t.tabIndex = -1;
      }
    }
    for (const list of root.querySelectorAll("[data-id-list]")) {
      const scope = list.closest("[data-token-scope]");
      if (!scope) continue;
      const ids = list.textContent.split(" ").filter(Boolean);
      const given = []; // [seg, its ids, the class of its id spans]
      let next = 0;
      scope.querySelectorAll(TOKEN).forEach(function (tok, seg) {
        const own = ids.slice(next, next + tokenCount(tok));
        next += own.length;
        tok.dataset.seg = seg;
        tok.dataset.ids = own.join(" ");
        if (own.length) given.push([seg, own, "id " + colourOf(tok) + (tok.classList.contains("special") ? " special" : "")]);
      });
      // The linked id spans are built when they can be seen: now, or when their closed <details> opens (compare's
      // ten panes of ids, closed, would otherwise double the elements that every keystroke swaps out and in).
      const build = function () {
        if (!list.isConnected) return;
        const out = document.createDocumentFragment();
        for (const [seg, own, cls] of given) {
          for (const id of own) {
            const el = span(cls, id);
            el.dataset.seg = seg;
            out.append(el, " ");
          }
        }
        list.replaceWith(out);
      };
      const closed = list.closest("details:not([open])");
      if (closed) {
        const summary = closed.querySelector(":scope > summary");
        if (summary) summary.addEventListener("click", build, { once: true }); // before it opens: no empty frame
        closed.addEventListener("toggle", build, { once: true });
      } else {
        build();
      }
    }
    // a unigram lattice's grid: its columns and each cell's place come as data attributes (templates/
    // _explain_parts.html), set here as style properties: the Content-Security-Policy allows no style attribute
    const grids = Array.from(root.querySelectorAll(".lattice[data-columns]"));
    if (root.matches && root.matches(".lattice[data-columns]")) grids.push(root);
    for (const grid of grids) {
      grid.style.gridTemplateColumns = "repeat(" + Number(grid.dataset.columns) + ", minmax(min-content, auto))";
      for (const cell of grid.querySelectorAll("[data-from]")) {
        const from = Number(cell.dataset.from);
        cell.style.gridColumn = cell.dataset.to ? from + " / " + Number(cell.dataset.to) : String(from);
      }
    }
    // bars sized by the server (templates/_measure_results.html): their width and place in % come as data
    // attributes, set here for the same reason
    for (const bar of root.querySelectorAll("[data-width], [data-left]")) {
      if (bar.dataset.width) bar.style.width = Number(bar.dataset.width) + "%";
      if (bar.dataset.left) bar.style.left = Number(bar.dataset.left) + "%";
    }
    // a unigram lattice wider than its box scrolls so that the explained token's piece is in view (the lattice only)
    for (const node of root.querySelectorAll(".lattice > .lattice-node.this")) {
      const grid = node.parentElement;
      if (grid.scrollWidth > grid.clientWidth) {
        grid.scrollLeft = node.offsetLeft - grid.offsetLeft - (grid.clientWidth - node.offsetWidth) / 2;
      }
    }
    // a view re-rendered (typing, reload) marks the token whose explanation is open, in the pane it is of
    const forms = new Set();
    for (const view of document.querySelectorAll(".tokens[data-explain][data-first-token]")) {
      forms.add(document.querySelector(view.dataset.explain));
    }
    for (const form of forms) {
      const field = form && form.elements.namedItem("explain");
      if (field) markExplainedViews(form, field.value);
    }
  }

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:load", function (event) {
    if (event.target instanceof Element) enhance(event.target);
  });

  // An answer asked for with an explained index that is no longer the one its explain form holds (the
  // explanation was closed, or another token explained, while it was on its way: the playground's /render carries
  // the explanation too) brought an old explanation with it: ask for the current one, whose answer also puts the
  // address right.
  document.addEventListener("htmx:afterSwap", function (event) {
    const config = event.detail && event.detail.requestConfig;
    const sent = config && config.formData instanceof FormData ? config.formData.get("explain") : null;
    const include = config && config.elt instanceof Element ? config.elt.getAttribute("hx-include") : null;
    if (sent === null || !include || !window.htmx) return;
    for (const selector of include.split(",")) {
      const form = document.querySelector(selector.trim());
      const field = form instanceof HTMLFormElement ? form.elements.namedItem("explain") : null;
      if (field && field.value !== sent) htmx.trigger(form, "submit");
    }
  });

  // After htmx swaps a result in, a one-line summary goes to the page's status region for screen readers.
  document.addEventListener("htmx:afterSwap", function (event) {
    const status = document.getElementById("announce");
    const source = event.detail && event.detail.target && event.detail.target.querySelector("[data-announce]");
    if (status && source) status.textContent = source.dataset.announce;
  });

  // The decode box decodes its ids again when the model changes, unless what was typed was itself refused (not
  // numbers, an empty box): a stale invalid entry is not posted again on every model change. Typing again decides
  // anew; ids refused only by the new model (no such id there) still try the next model.
  document.addEventListener("input", function (event) {
    if (event.target instanceof Element && event.target.id === "ids-input") event.target.form.dataset.typed = "1";
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    const form = event.detail && event.detail.elt;
    if (!(form instanceof HTMLFormElement) || form.id !== "decode" || !form.dataset.typed) return;
    delete form.dataset.typed;
    form.dataset.refused = event.detail.successful ? "" : "1";
  });
  document.addEventListener("change", function (event) {
    if (!(event.target instanceof Element) || event.target.id !== "tokenizer") return;
    const form = document.getElementById("decode");
    const ids = document.getElementById("ids-input");
    if (form && ids && ids.value.trim() && form.dataset.refused !== "1" && window.htmx) htmx.trigger(form, "redecode");
  });

  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element && event.target.closest("[data-copy-ids]");
    const form = document.getElementById("play");
    if (!button || !form) return;
    const label = button.textContent;
    fetch("/ids", { method: "POST", body: new FormData(form) }) // multipart: fast to read for long texts
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (text) {
        return navigator.clipboard.writeText(text).then(function () {
          const n = text ? text.split(",").length : 0;
          button.textContent = "Copied " + n.toLocaleString() + " ids";
        });
      })
      .catch(function () {
        button.textContent = "Copy failed";
      })
      .finally(function () {
        setTimeout(function () { button.textContent = label; }, 2000);
      });
  });

  // A page's "Print" button (the lab's handout).
  document.addEventListener("click", function (event) {
    if (event.target instanceof Element && event.target.closest("[data-print]")) window.print();
  });

  // "Download JSON" / "CSV": submit buttons of the playground's form (formaction: they work without JavaScript);
  // here the form is posted with fetch instead, before htmx sees a submit, and the file saved under the server's name.
  document.addEventListener("click", function (event) {
    const link = event.target instanceof Element && event.target.closest("button[data-download]");
    const form = document.getElementById("play");
    if (!link || !form) return;
    event.preventDefault();
    const label = link.textContent;
    fetch("/tokens." + link.dataset.download, { method: "POST", body: new FormData(form) })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        const named = /filename="([^"]+)"/.exec(r.headers.get("Content-Disposition") || "");
        return r.blob().then(function (blob) { return [blob, named ? named[1] : "tokens." + link.dataset.download]; });
      })
      .then(function ([blob, name]) {
        const a = document.createElement("a");
        a.href = URL.createObjectURL(blob);
        a.download = name;
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(a.href); }, 10000);
      })
      .catch(function () {
        link.textContent = "Download failed";
        setTimeout(function () { link.textContent = label; }, 2000);
      });
  });
})();
