// Tokenizer pickers (templates/_picker.html), made searchable. Without this file they are native controls.
// - One choice ([data-picker="single"]): the <select> stays the form's control (hidden, out of the Tab order);
//   an ARIA combobox stands in for it: type to filter by name, label, maker or a model name the entry is known
//   by (gpt-4o, gpt-4o-2024-05-13: the option says which name matched), arrow keys move, Enter picks, Escape
//   closes. Its listbox shows one option per model (the <select> has one per engine), grouped by maker, with the
//   vocabulary size; an "Engine" <select> beside it switches between the model's engines. Every choice sets the
//   <select> to a registry name and dispatches input and change on it, so htmx and the URL see what they saw
//   before; a change made to the <select> by anyone else (a test, the browser restoring the form) is shown too.
//   The combobox's own typing never reaches the page's form (it would post on every key). The chosen title is
//   shown whole (it wraps; the input over it shows only what is typed), never cut.
// - Several choices ([data-picker="multiple"]): the checkboxes stay as they are; a filter box above hides the
//   rows that do not match (the same search, saying which model name matched); arrow keys move between the
//   visible checkboxes, Enter ticks.
// - The engine a user chose: choosing another model keeps the engine last chosen in this picker among several
//   (the engine switch, an engine's checkbox, or the page opened on one: native-gpt2 is Tokenplay) where the model
//   has it, else the model's reference library; a model with one engine changes nothing. Kept for the tab
//   (sessionStorage), so a picker swapped in by htmx or a reload remembers it.
// - "Add a tokenizer…" (the last entry): opens the add form, which posts to POST /api/tokenizers; on 201 the new
//   tokenizer joins the picker's "yours" group and is chosen, on 4xx the message shows beside the form and the
//   file and fields stay. Everything shown is set with textContent.
// Pickers swapped in by htmx (compare's presets) are set up when they arrive.
(function () {
  "use strict";

  const API = "/api/tokenizers";
  // An engine as the pickers name it (app/web/rendering/pickers.py ENGINE_NAMES), for the engines an added file answers with.
  const ENGINES = { huggingface: "tokenizers", tokenplay: "Tokenplay" };
  let uid = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    return node;
  }

  function words(query) {
    return query.toLowerCase().split(/\s+/).filter(Boolean);
  }

  function matches(search, ws) {
    return ws.every(function (w) { return search.includes(w); });
  }

  function list(attr) {
    return attr ? attr.split(" ").filter(Boolean) : [];
  }

  // The model names (data-models) and name beginnings (data-prefixes) of one entry, as the registry resolves them.
  function knownAs(node) {
    return { models: list(node.dataset.models), prefixes: list(node.dataset.prefixes) };
  }

  // Which model name `query` finds among `known` entries' (an array of {models, prefixes}): a Map from index to
  // {text, exact}. The entry the query names resolves to, as the server resolves it (an exact name, else the
  // beginning it starts with: the longest, which is tiktoken's first for its table), is `exact`; the others are
  // the names that contain the query (gpt-4 is part of gpt-4o and gpt-4.1).
  function nameMatches(known, query) {
    const q = query.trim().toLowerCase();
    const out = new Map();
    if (!q || /\s/.test(q)) return out;
    let target = -1;
    let text = "";
    known.forEach(function (k, i) {
      const name = k.models.find(function (m) { return m.toLowerCase() === q; });
      if (name && target < 0) {
        target = i;
        text = name;
      }
    });
    if (target < 0) {
      let longest = "";
      known.forEach(function (k, i) {
        for (const p of k.prefixes) {
          if (q.startsWith(p.toLowerCase()) && p.length > longest.length) {
            longest = p;
            target = i;
          }
        }
      });
      text = longest + "…";
    }
    if (target >= 0) out.set(target, { text: text, exact: true });
    known.forEach(function (k, i) {
      if (i === target) return;
      // the names that contain the query, those it begins first, shortest first (gpt-4o before gpt-4o-mini)
      const names = k.models.concat(k.prefixes.map(function (p) { return p + "…"; }))
        .filter(function (m) { return m.toLowerCase().includes(q); })
        .sort(function (a, b) { return a.toLowerCase().indexOf(q) - b.toLowerCase().indexOf(q) || a.length - b.length; });
      if (names.length) out.set(i, { text: names.slice(0, 3).join(", ") + (names.length > 3 ? ", …" : ""), exact: false });
    });
    return out;
  }

  function matchText(match) {
    return "matches " + match.text;
  }

  // The engine a picker's user chose last among several (by how the picker names it: "Tokenplay"), kept per
  // picker for the tab; null: none, the reference library.
  function engineMemory(key) {
    const storeKey = "tp-engine:" + key;
    let value = null;
    try { value = sessionStorage.getItem(storeKey); } catch (err) { /* storage off */ }
    return {
      get: function () { return value; },
      set: function (engine) {
        value = engine;
        try { sessionStorage.setItem(storeKey, engine); } catch (err) { /* storage off */ }
      },
    };
  }

  // What a user's own change does: the page's htmx triggers listen for input (playground) and change.
  function fire(control) {
    control.dispatchEvent(new Event("input", { bubbles: true }));
    control.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // Keep a control's events from the page's form: its htmx trigger would post on every key or click.
  function quiet(node) {
    ["input", "change"].forEach(function (type) {
      node.addEventListener(type, function (event) { event.stopPropagation(); });
    });
  }

  // -- one choice: a combobox over the <select> ------------------------------------------------------------

  // The <select>'s options as entries: one per data-entry (a model), its engines in order, per <optgroup>.
  function readGroups(select) {
    return Array.from(select.querySelectorAll("optgroup"), function (optgroup) {
      const entries = new Map();
      for (const option of optgroup.querySelectorAll("option")) {
        const key = option.dataset.entry || option.value;
        let entry = entries.get(key);
        if (!entry) {
          entry = {
            title: option.dataset.title || option.value,
            vocab: option.dataset.vocab || "",
            search: option.dataset.search || option.value.toLowerCase(),
            known: knownAs(option),
            engines: [],
          };
          entries.set(key, entry);
        }
        entry.engines.push({ name: option.value, engine: option.dataset.engine || "" });
      }
      return { maker: optgroup.label, entries: Array.from(entries.values()) };
    });
  }

  function spoken(entry, match) {
    let name = entry.title;
    if (match) name += ", " + matchText(match);
    if (entry.engines.length > 1) name += ", engines " + entry.engines.map(function (e) { return e.engine; }).join(" or ");
    if (entry.vocab) name += ", vocabulary " + entry.vocab;
    return name;
  }

  function setupSingle(root) {
    const select = root.querySelector("select.picker-native");
    const label = root.querySelector('label[for="' + CSS.escape(select.id) + '"]');
    const details = root.querySelector(".picker-add");
    const base = select.id;

    const input = el("input", "picker-input");
    input.type = "text";
    input.id = base + "-combo";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-controls", base + "-list");
    // The chosen title, whole: it sizes the field and wraps where the row is too narrow; the input lies over it
    // and shows its own text only while the user types a search (an input cannot wrap, so it would cut it).
    const shown = el("span", "picker-shown");
    shown.setAttribute("aria-hidden", "true");
    const field = el("span", "picker-field");
    field.append(shown, input);
    const vocab = el("span", "picker-chosen-vocab");
    vocab.title = "vocabulary size";
    const toggle = el("button", "picker-toggle", "▾");
    toggle.type = "button";
    toggle.tabIndex = -1;
    toggle.setAttribute("aria-label", "Show the tokenizers");
    const list = el("div", "picker-list");
    list.id = base + "-list";
    list.hidden = true;
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", label ? label.textContent.trim() : "Tokenizers");
    const combo = el("div", "picker-combo");
    combo.append(field, vocab, toggle, list);

    const engineSelect = el("select", "picker-engine-select");
    engineSelect.id = base + "-engine";
    const engineLabel = el("label", "picker-engine-label", "Engine");
    engineLabel.htmlFor = engineSelect.id;
    const engineOnly = el("span", "picker-engine-only");
    const engineBox = el("span", "picker-engine-switch");
    engineBox.append(engineLabel, engineSelect, engineOnly);

    select.after(combo, engineBox);
    select.tabIndex = -1;
    select.setAttribute("aria-hidden", "true");
    if (label) label.htmlFor = input.id;
    root.classList.add("picker-enhanced");
    quiet(input);
    quiet(engineSelect);

    let groups = readGroups(select);
    let open = false;
    let typed = false; // the text is a query the user typed, not the chosen entry's title
    let items = []; // the listbox's options in order: {node, entry} (entry null: "Add a tokenizer…")
    let active = -1;
    let choosing = false; // this script is setting the <select> (a change then is not someone else's)
    const engine = engineMemory(base);

    function entryOf(name) {
      for (const group of groups) {
        for (const entry of group.entries) {
          if (entry.engines.some(function (e) { return e.name === name; })) return entry;
        }
      }
      return null;
    }

    function chosenEntry() {
      return entryOf(select.value);
    }

    // `name` was chosen as an engine: remembered when its model has several (one engine is no choice).
    function remember(name) {
      const entry = entryOf(name);
      const chosen = entry && entry.engines.length > 1 && entry.engines.find(function (e) { return e.name === name; });
      if (chosen) engine.set(chosen.engine);
    }

    function setTyped(on) {
      typed = on;
      combo.classList.toggle("picker-typing", on);
      // what is typed is a search, not the chosen model: its vocabulary size would belong to neither
      vocab.hidden = on;
    }

    function showChosen() {
      const entry = chosenEntry();
      setTyped(false);
      input.value = entry ? entry.title : select.value;
      shown.textContent = input.value;
      input.title = entry ? entry.title : "";
      vocab.textContent = entry ? entry.vocab : "";
      const engines = entry ? entry.engines : [];
      engineSelect.replaceChildren(...engines.map(function (e) { return new Option(e.engine, e.name); }));
      engineSelect.value = select.value;
      engineSelect.hidden = engines.length < 2;
      engineLabel.hidden = engines.length < 2;
      engineOnly.textContent = engines.length === 1 && engines[0].engine ? "engine: " + engines[0].engine : "";
      engineOnly.hidden = !engineOnly.textContent;
      engineBox.hidden = engineSelect.hidden && engineOnly.hidden;
    }

    function setActive(index) {
      if (active >= 0 && items[active]) items[active].node.classList.remove("active");
      active = Math.max(0, Math.min(index, items.length - 1));
      const item = items[active];
      item.node.classList.add("active");
      input.setAttribute("aria-activedescendant", item.node.id);
      item.node.scrollIntoView({ block: "nearest" });
    }

    function optionNode(entry, chosen, match) {
      const node = el("div", "picker-option");
      node.id = base + "-option-" + (++uid);
      node.setAttribute("role", "option");
      node.setAttribute("aria-selected", String(entry === chosen));
      node.setAttribute("aria-label", spoken(entry, match));
      const meta = el("span", "picker-meta");
      if (entry.engines.length > 1) {
        meta.append(el("span", "picker-engines-hint", entry.engines.map(function (e) { return e.engine; }).join(" · ")));
      }
      if (entry.vocab) meta.append(el("span", "picker-vocab", entry.vocab));
      node.append(el("span", "picker-title", entry.title), meta);
      if (match) node.append(el("span", "picker-match" + (match.exact ? " picker-match-exact" : ""), matchText(match)));
      return node;
    }

    function renderList() {
      const ws = typed ? words(input.value) : [];
      const all = groups.flatMap(function (group) { return group.entries; });
      const named = typed ? nameMatches(all.map(function (e) { return e.known; }), input.value) : new Map();
      const chosen = chosenEntry();
      let start = 0;
      let index = 0;
      items = [];
      active = -1;
      list.replaceChildren();
      groups.forEach(function (group, i) {
        const box = el("div", "picker-group-options");
        box.setAttribute("role", "group");
        const head = el("div", "picker-group-label", group.maker);
        head.id = base + "-group-" + i;
        head.setAttribute("role", "presentation");
        box.setAttribute("aria-labelledby", head.id);
        box.append(head);
        for (const entry of group.entries) {
          const match = named.get(index++);
          if (!match && !matches(entry.search, ws)) continue;
          const node = optionNode(entry, chosen, match);
          // Start on the chosen entry, or on the one the typed model name resolves to.
          if ((entry === chosen && !typed) || (match && match.exact)) start = items.length;
          items.push({ node: node, entry: entry, named: match && match.exact ? input.value.trim() : "" });
          box.append(node);
        }
        if (box.childElementCount > 1) list.append(box);
      });
      if (!items.length) list.append(el("div", "picker-empty", "No tokenizer matches “" + input.value + "”."));
      const add = el("div", "picker-option picker-option-add", "Add a tokenizer…");
      add.id = base + "-option-add";
      add.setAttribute("role", "option");
      add.setAttribute("aria-selected", "false");
      items.push({ node: add, entry: null });
      list.append(add);
      setActive(start);
    }

    function openList() {
      if (open) return;
      open = true;
      setTyped(false);
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      renderList();
    }

    function closeList() {
      if (!open) return;
      open = false;
      list.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      showChosen();
    }

    function choose(name) {
      if (select.value !== name) {
        select.value = name;
        choosing = true;
        try {
          fire(select);
        } finally {
          choosing = false;
        }
      }
      showChosen();
    }

    function pick(item) {
      closeList();
      if (!item.entry) {
        openAdd();
        return;
      }
      // A model name typed whole (gpt-4o, Qwen/Qwen3-8B) goes with the choice, where the form keeps one (the
      // playground's "model" field): the page then says that model's context window and price.
      const field = select.form && select.form.elements.namedItem("model");
      const modelField = field instanceof HTMLInputElement ? field : null;
      const before = modelField ? modelField.value : "";
      if (modelField) modelField.value = item.named || "";
      // The engine the user chose last where the new model has it; else its reference library (listed first).
      const engines = item.entry.engines;
      const name = (engines.find(function (e) { return e.engine === engine.get(); }) || engines[0]).name;
      if (modelField && modelField.value !== before && select.value === name) fire(select); // same tokenizer, new model
      choose(name);
      input.select(); // typing again starts a new search
    }

    function openAdd() {
      details.hidden = false;
      details.open = true;
      details.querySelector('[data-add="file"]').focus();
    }

    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        if (!open) openList();
        else setActive(active + (event.key === "ArrowDown" ? 1 : -1));
      } else if (event.key === "Enter") {
        event.preventDefault(); // never submit the page's form from here
        if (open) pick(items[active]);
        else openList();
      } else if (event.key === "Escape" && open) {
        event.preventDefault();
        closeList();
        input.select();
      } else if (event.key === "Tab") {
        closeList();
      }
    });
    input.addEventListener("input", function () {
      if (!open) openList();
      setTyped(true);
      renderList();
    });
    input.addEventListener("focus", function () { input.select(); });
    // A click on the closed picker opens it with the title selected, so typing starts a new search: the
    // mousedown's own caret placement (which would collapse that selection) is skipped.
    input.addEventListener("mousedown", function (event) {
      if (open) return;
      event.preventDefault();
      input.focus();
    });
    input.addEventListener("click", function () {
      if (!open) {
        openList();
        input.select();
      }
    });
    // Keep the focus in the input while the mouse picks an option (else the blur would close the list first).
    list.addEventListener("mousedown", function (event) { event.preventDefault(); });
    toggle.addEventListener("mousedown", function (event) { event.preventDefault(); });
    list.addEventListener("click", function (event) {
      const node = event.target instanceof Element && event.target.closest('[role="option"]');
      const item = node && items.find(function (i) { return i.node === node; });
      if (item) pick(item);
    });
    toggle.addEventListener("click", function () {
      if (open) {
        closeList();
      } else {
        input.focus();
        openList();
      }
    });
    root.addEventListener("focusout", function (event) {
      if (!combo.contains(event.relatedTarget)) closeList();
    });
    engineSelect.addEventListener("change", function () {
      remember(engineSelect.value);
      choose(engineSelect.value);
    });
    select.addEventListener("change", function () {
      if (!choosing) remember(select.value); // set by someone else: as if chosen here
      showChosen();
    });
    details.hidden = true;
    details.addEventListener("toggle", function () {
      if (!details.open) details.hidden = true;
    });

    setupAdd(root, function () { input.focus(); }, function (added) {
      let optgroup = Array.from(select.querySelectorAll("optgroup")).find(function (g) { return g.label === "yours"; });
      if (!optgroup) {
        optgroup = el("optgroup");
        optgroup.label = "yours";
        const missing = Array.from(select.querySelectorAll("optgroup")).find(function (g) { return g.label === "not found"; });
        select.insertBefore(optgroup, missing || null);
      }
      for (const [name, engine] of Object.entries(added.engines)) {  // a tokenizer.json: tokenizers, then Tokenplay
        const several = Object.keys(added.engines).length > 1;
        const option = new Option(added.name + (several ? " · " + (ENGINES[engine] || engine) : "") + " · " + added.vocab, name);
        Object.assign(option.dataset, { entry: added.name, title: added.name, engine: ENGINES[engine] || engine, vocab: added.vocab, search: added.search });
        optgroup.append(option);
      }
      groups = readGroups(select);
      choose(added.name);
      input.focus();
    });
    remember(select.value); // the page opened on an engine (native-gpt2): the engine chosen last
    showChosen();
  }

  // -- several choices: a filter over the checkbox rows ------------------------------------------------------

  function setupMultiple(root) {
    const filter = el("input", "picker-filter");
    filter.type = "search";
    filter.placeholder = "Filter: name, model, maker…";
    filter.autocomplete = "off";
    filter.spellcheck = false;
    filter.setAttribute("aria-label", "Filter the tokenizers");
    filter.setAttribute("aria-controls", root.id);
    root.prepend(filter);
    root.classList.add("picker-enhanced");
    quiet(filter);
    const engine = engineMemory(root.id);
    let viaTitle = false; // the checkbox being ticked was reached through its model's title
    // Folded (data-fold="chosen", the compare page): only the rows of the chosen models show, so that the text and
    // the results come first; a filter still searches every row, and "Show all" unfolds. A row ticked while
    // folded (found by the filter) stays shown; a row unticked stays too, until the picker is folded again.
    const foldable = root.dataset.fold === "chosen";
    let folded = false;
    const foldToggle = el("button", "picker-fold-toggle btn btn-small");
    foldToggle.type = "button";
    foldToggle.setAttribute("aria-controls", root.id);
    if (foldable) filter.after(foldToggle);

    function rows() {
      return Array.from(root.querySelectorAll(".picker-row"));
    }

    function rowBoxes(row) {
      return Array.from(row.querySelectorAll('input[type="checkbox"]'));
    }

    function boxes() {
      return Array.from(root.querySelectorAll('.picker-row:not([hidden]) input[type="checkbox"]'));
    }

    // The checkbox a model's title ticks: the engine the user chose last where the model has it, else the
    // reference library's (the first).
    function preferredBox(row) {
      const all = rowBoxes(row);
      return all.find(function (b) { return b.dataset.engine === engine.get(); }) || all[0];
    }

    function retarget() {
      for (const row of rows()) {
        const box = preferredBox(row);
        if (box) row.querySelector(".picker-title").htmlFor = box.id;
      }
    }

    function applyFilter() {
      const ws = words(filter.value);
      const all = rows();
      const named = nameMatches(all.map(knownAs), filter.value);
      all.forEach(function (row, i) {
        const match = named.get(i);
        let note = row.querySelector(".picker-match");
        if (match && !note) {
          note = el("span", "picker-match");
          row.querySelector(".picker-vocab").after(note);
        }
        if (note) {
          note.textContent = match ? matchText(match) : "";
          note.classList.toggle("picker-match-exact", Boolean(match && match.exact));
          note.hidden = !match;
        }
        const folds = folded && !ws.length && !row.classList.contains("picker-kept");
        row.hidden = folds || (!match && !matches(row.dataset.search || "", ws));
        row.classList.toggle("picker-named", Boolean(match && match.exact));
      });
      for (const group of root.querySelectorAll(".picker-group")) {
        group.hidden = !group.querySelector(".picker-row:not([hidden])");
      }
    }

    // The row Enter ticks from the filter: the one the typed model name resolves to, else the first shown.
    function firstRow() {
      return root.querySelector(".picker-row.picker-named:not([hidden])") || root.querySelector(".picker-row:not([hidden])");
    }

    function setFolded(on) {
      folded = on;
      for (const row of rows()) {
        row.classList.toggle("picker-kept", rowBoxes(row).some(function (b) { return b.checked; }));
      }
      root.classList.toggle("picker-folded", on);
      foldToggle.textContent = on ? "Show all " + rows().length + " tokenizers" : "Show only the chosen ones";
      foldToggle.setAttribute("aria-expanded", String(!on));
      applyFilter();
    }
    if (foldable) {
      foldToggle.addEventListener("click", function () { setFolded(!folded); });
      setFolded(rows().some(function (row) { return rowBoxes(row).some(function (b) { return b.checked; }); }));
    }

    filter.addEventListener("input", applyFilter);
    filter.addEventListener("keydown", function (event) {
      const first = boxes()[0];
      if (event.key === "ArrowDown" && first) {
        event.preventDefault();
        first.focus();
      } else if (event.key === "Enter") {
        event.preventDefault(); // never submit the page's form from here; tick the first match instead
        const row = firstRow();
        if (row) {
          const box = preferredBox(row);
          viaTitle = true; // a model was chosen, not an engine
          try {
            box.click();
          } finally {
            viaTitle = false;
          }
          box.focus();
        }
      }
    });
    // A click on a title ticks the checkbox its label names (after this click is dispatched): no engine choice.
    root.addEventListener("click", function (event) {
      if (event.target instanceof Element && event.target.closest(".picker-title")) {
        viaTitle = true;
        setTimeout(function () { viaTitle = false; });
      }
    }, true);
    root.addEventListener("change", function (event) {
      const box = event.target;
      if (!(box instanceof HTMLInputElement) || box.type !== "checkbox" || !box.checked) return;
      if (box.closest(".picker-row")) box.closest(".picker-row").classList.add("picker-kept");
      if (viaTitle) return;
      const row = box.closest(".picker-row");
      if (row && rowBoxes(row).length > 1) {
        engine.set(box.dataset.engine || "");
        retarget();
      }
    });
    root.addEventListener("keydown", function (event) {
      const box = event.target;
      if (!(box instanceof HTMLInputElement) || box.type !== "checkbox") return;
      const all = boxes();
      const at = all.indexOf(box);
      if (event.key === "ArrowDown" || event.key === "ArrowRight") {
        event.preventDefault();
        (all[at + 1] || box).focus();
      } else if (event.key === "ArrowUp" || event.key === "ArrowLeft") {
        event.preventDefault();
        (at > 0 ? all[at - 1] : filter).focus();
      } else if (event.key === "Enter") {
        event.preventDefault();
        box.click();
      } else if (event.key === "Escape") {
        filter.focus();
      }
    });

    setupAdd(root, function () { root.querySelector(".picker-add > summary").focus(); }, function (added) {
      let group = root.querySelector('.picker-group[data-maker="yours"]');
      if (!group) {
        group = root.querySelector("template.picker-new-group").content.firstElementChild.cloneNode(true);
        root.querySelector(".picker-groups").append(group);
      }
      const row = root.querySelector("template.picker-new-row").content.firstElementChild.cloneNode(true);
      const first = row.querySelector(".picker-engine");
      const id = root.id + "-added-" + (++uid);
      // One checkbox and reference radio per engine (a tokenizer.json: tokenizers under its name, then Tokenplay)
      Object.entries(added.engines).forEach(function ([name, engine], index) {
        const part = index === 0 ? first : first.cloneNode(true);
        const pick = part.querySelector('input[type="checkbox"]');
        pick.id = id + "-" + (index + 1);
        pick.value = part.querySelector('input[type="radio"]').value = name;
        pick.dataset.engine = ENGINES[engine] || engine;
        part.querySelector(".picker-engine-name").textContent = pick.dataset.engine;
        part.querySelector(".pick").title = index === 0 ? added.label : name;
        part.querySelector(".ref").title = "compare boundaries to " + name;
        part.querySelector(".picker-sr-name").textContent = name;
        if (index > 0) {
          pick.after(el("span", "sr-only picker-sr-title", added.name + ", "));
          row.querySelector(".picker-engines").append(part);
        }
      });
      const box = first.querySelector('input[type="checkbox"]');
      row.dataset.entry = added.name;
      row.dataset.search = added.search;
      row.querySelector(".picker-title").textContent = added.name;
      row.querySelector(".picker-title").htmlFor = box.id;
      row.querySelector(".picker-vocab").textContent = added.vocab;
      group.hidden = false;
      group.querySelector(".picker-rows").append(row);
      box.checked = true;
      fire(box);
      box.focus();
    });

    // The page opened on an engine other than a reference library (t=native-gpt2): the engine chosen last.
    for (const row of rows()) {
      const all = rowBoxes(row);
      const other = all.length > 1 && all.slice(1).find(function (b) { return b.checked; });
      if (other) engine.set(other.dataset.engine || "");
    }
    retarget();
  }

  // -- "Add a tokenizer…" -------------------------------------------------------------------------------------

  // A .tiktoken file: by its name, or a first line "base64 rank" (the server tells the formats apart the same way).
  function looksTiktoken(file) {
    if (/\.tiktoken$/i.test(file.name)) return Promise.resolve(true);
    return file.slice(0, 512).text().then(function (head) {
      return /^[A-Za-z0-9+/]+=*[ \t]+\d+\r?$/.test(head.replace(/^\uFEFF/, "").split("\n")[0]);
    }, function () { return false; });
  }

  function setupAdd(root, back, added) {
    const details = root.querySelector(".picker-add");
    const fields = details.querySelector("[data-add-fields]");
    const part = {}; // the form's parts by their data-add name: file, name, pattern, regex, special, error...
    for (const node of fields.querySelectorAll("[data-add]")) part[node.dataset.add] = node;
    const { file, config, name, pattern, regex, special, tiktoken, error, status, submit, cancel } = part;
    quiet(details);
    // This script posts the fields itself; unnamed, they stay out of the page's htmx requests too (hx-include of
    // a container, as compare's presets do, takes every named field inside it, whichever form it belongs to).
    for (const named of fields.querySelectorAll("[name]")) named.removeAttribute("name");

    function showError(message) {
      error.textContent = message;
      error.hidden = false;
    }

    function showRegex() {
      part["regex-box"].hidden = pattern.value !== "custom";
    }

    async function send(event) {
      event.preventDefault();
      const chosen = file.files[0];
      if (!chosen) {
        showError("Choose a tokenizer file first.");
        file.focus();
        return;
      }
      const body = new FormData();
      body.append("file", chosen, chosen.name);
      if (config.files[0]) body.append("config", config.files[0], config.files[0].name);
      if (name.value.trim()) body.append("name", name.value.trim());
      if (!tiktoken.disabled) {
        const custom = pattern.value === "custom";
        if (custom && !regex.value) {
          showError("Type the split regex, or choose one of the named split patterns.");
          regex.focus();
          return;
        }
        body.append("pattern", custom ? regex.value : pattern.value);
        if (special.value.trim()) body.append("special", special.value);
      }
      error.hidden = true;
      submit.disabled = true;
      status.textContent = "Checking " + chosen.name + "…";
      let answer = {};
      let response;
      try {
        response = await fetch(API, { method: "POST", body: body });
        answer = await response.json().catch(function () { return {}; });
      } catch (err) {
        showError("The server could not be reached: " + (err && err.message ? err.message : err));
        return;
      } finally {
        submit.disabled = false;
        status.textContent = "";
      }
      if (response.status !== 201) {
        showError(typeof answer.detail === "string" ? answer.detail : "The server answered " + response.status + ".");
        return;
      }
      for (const field of [file, config, name, regex, special]) field.value = "";
      tiktoken.disabled = false;
      const warnings = answer.warnings || [];
      if (warnings.length) {  // added, with a warning to read: the form stays open to say it
        status.textContent = "Added " + answer.name + ". Careful: " + warnings.join(" ");
      } else {
        details.open = false;
      }
      added({
        name: answer.name,
        label: answer.label || answer.name,
        vocab: answer.n_vocab ? answer.n_vocab.toLocaleString("en-US") : "",
        search: [answer.name, answer.label || "", "yours"].join(" ").toLowerCase(),
        engines: answer.engines || { [answer.name]: "tokenplay" },
      });
    }

    file.addEventListener("change", function () {
      error.hidden = true;
      const chosen = file.files[0];
      if (!chosen) return;
      looksTiktoken(chosen).then(function (yes) { tiktoken.disabled = !yes; });
    });
    pattern.addEventListener("change", showRegex);
    submit.addEventListener("click", send);
    fields.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && event.target instanceof HTMLInputElement && event.target.type === "text") send(event);
    });
    cancel.hidden = false;
    cancel.addEventListener("click", function () {
      details.open = false;
      back();
    });
    showRegex();
  }

  function setup(scope) {
    const fresh = "[data-picker]:not([data-picker-ready])";
    for (const root of [...(scope.matches(fresh) ? [scope] : []), ...scope.querySelectorAll(fresh)]) {
      root.setAttribute("data-picker-ready", "");
      if (root.dataset.picker === "multiple") setupMultiple(root);
      else setupSingle(root);
    }
  }

  document.addEventListener("DOMContentLoaded", function () { setup(document.documentElement); });
  document.addEventListener("htmx:load", function (event) {
    if (event.target instanceof Element) setup(event.target);
  });
})();
