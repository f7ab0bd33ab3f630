// Tarn console: a little script over server-rendered pages. Everything
// works without it (an action then asks on a confirmation page); with it,
// actions ask in a dialog, status refreshes in place, and the connection
// snippets get tabs and copy buttons.
"use strict";

// Actions ask before they run: a form with data-confirm opens a dialog
// and only Confirm submits it (with confirmed=yes, which the server
// requires; without it the server shows its own confirmation page).
function confirmForms() {
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (ev) => {
      if (form.dataset.confirmed === "yes") return;
      ev.preventDefault();
      const dlg = document.createElement("dialog");
      dlg.setAttribute("aria-labelledby", "confirm-title");
      const h = document.createElement("h2");
      h.id = "confirm-title";
      // {name} in the question is the value the form's field name has
      // now (the error mode picked).
      h.textContent = form.dataset.confirm.replace(/\{([a-z-]+)\}/g, (_, name) => (form.elements[name] || {}).value || name);
      const row = document.createElement("div");
      row.className = "action-row";
      const cancel = document.createElement("button");
      cancel.type = "button";
      cancel.textContent = "Cancel";
      const ok = document.createElement("button");
      ok.type = "button";
      ok.className = form.querySelector("button.danger") ? "danger" : "primary";
      ok.textContent = "Confirm";
      ok.dataset.action = "confirm";
      row.append(cancel, ok);
      dlg.append(h, row);
      document.body.append(dlg);
      cancel.addEventListener("click", () => dlg.close());
      dlg.addEventListener("close", () => dlg.remove());
      ok.addEventListener("click", () => {
        const f = document.createElement("input");
        f.type = "hidden";
        f.name = "confirmed";
        f.value = "yes";
        form.append(f);
        form.dataset.confirmed = "yes";
        dlg.close();
        form.submit();
      });
      dlg.showModal();
      cancel.focus();
    });
  });
}

// Elements with data-refresh="N" and an id are refreshed every N
// seconds from the same page, unless the tab is hidden, a dialog is
// open, or keyboard focus is inside them (a refresh would lose it).
function refresh() {
  document.querySelectorAll("[data-refresh][id]").forEach((el) => {
    const every = Number(el.dataset.refresh) * 1000;
    if (!every) return;
    const tick = async () => {
      if (document.hidden || document.querySelector("dialog[open]") || el.contains(document.activeElement)) return;
      try {
        const resp = await fetch(location.href, { headers: { Accept: "text/html" }, cache: "no-store" });
        if (!resp.ok) return;
        const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
        const fresh = doc.getElementById(el.id);
        if (fresh) el.replaceChildren(...fresh.childNodes);
        const state = doc.querySelector("h1 [data-field=state]");
        const mine = document.querySelector("h1 [data-field=state]");
        if (state && mine) { mine.textContent = state.textContent; mine.className = state.className; }
      } catch (e) {
        // The server may be restarting; try again on the next tick.
      }
    };
    setInterval(tick, every);
  });
}

// Tabs (the WAI-ARIA tabs pattern): arrow keys move between tabs.
function tabs() {
  document.querySelectorAll("[data-tabs]").forEach((box) => {
    const tabs = Array.from(box.querySelectorAll("[role=tab]"));
    const select = (tab) => {
      tabs.forEach((t) => {
        const on = t === tab;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
      });
      tab.focus();
    };
    tabs.forEach((t, i) => {
      t.addEventListener("click", () => select(t));
      t.addEventListener("keydown", (ev) => {
        const n = tabs.length;
        if (ev.key === "ArrowRight") select(tabs[(i + 1) % n]);
        else if (ev.key === "ArrowLeft") select(tabs[(i - 1 + n) % n]);
        else if (ev.key === "Home") select(tabs[0]);
        else if (ev.key === "End") select(tabs[n - 1]);
        else return;
        ev.preventDefault();
      });
    });
  });
}

function copyButtons() {
  document.querySelectorAll("button[data-copy]").forEach((b) => {
    b.addEventListener("click", async () => {
      const code = document.getElementById(b.dataset.copy).querySelector("code").textContent;
      try {
        await navigator.clipboard.writeText(code);
        b.textContent = "Copied";
      } catch (e) {
        const range = document.createRange();
        range.selectNodeContents(document.getElementById(b.dataset.copy).querySelector("code"));
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        b.textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { b.textContent = "Copy"; }, 2000);
    });
  });
}

confirmForms();
refresh();
tabs();
copyButtons();
