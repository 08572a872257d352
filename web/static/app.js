// Hosted checkout: copy button, Pix countdown and live status polling.
// The page is complete without this file; the script only improves it.
(function () {
  'use strict';

  function pad(n) { return (n < 10 ? '0' : '') + n; }

  // ---- "Copiar": Clipboard API, then the legacy execCommand, then leave
  // the code selected so the buyer can copy it by hand.
  function legacyCopy(field) {
    field.focus();
    field.select();
    field.setSelectionRange(0, field.value.length);
    try { return document.execCommand('copy'); } catch (e) { return false; }
  }
  document.querySelectorAll('[data-copy]').forEach(function (btn) {
    var field = document.getElementById(btn.getAttribute('data-copy'));
    var status = document.querySelector('[data-copy-status]');
    if (!field) { return; }
    btn.hidden = false;
    btn.addEventListener('click', function () {
      var done = function (ok) {
        if (status) { status.textContent = btn.getAttribute(ok ? 'data-copied-text' : 'data-failed-text'); }
        if (!ok) { field.focus(); field.select(); }
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(
          function () { done(true); },
          function () { done(legacyCopy(field)); });
      } else {
        done(legacyCopy(field));
      }
    });
  });

  // ---- Countdown: from the seconds the server computed, so a wrong
  // device clock does not matter.
  var cd = document.querySelector('[data-countdown]');
  if (cd) {
    var deadline = Date.now() + Number(cd.getAttribute('data-remaining')) * 1000;
    var out = cd.querySelector('[data-countdown-value]');
    var ticker = null;
    var tick = function () {
      var s = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      if (s <= 0) {
        cd.textContent = cd.getAttribute('data-expired-text');
        clearInterval(ticker);
        return;
      }
      var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
      out.textContent = (h ? h + ':' + pad(m) : String(m)) + ':' + pad(s % 60);
    };
    ticker = setInterval(tick, 1000);
    tick();
  }

  // ---- Status polling every 3 s while the checkout can still change.
  var root = document.querySelector('[data-checkout]');
  if (!root || !root.hasAttribute('data-poll')) { return; }
  var url = root.getAttribute('data-status-url');
  var state = root.getAttribute('data-state');
  var INTERVAL = 3000, MAX_MS = 2 * 60 * 60 * 1000;
  var started = Date.now(), failures = 0, timer = null, inflight = false, stopped = false;

  function show(panel) {
    document.querySelectorAll('[data-panel]').forEach(function (el) {
      el.hidden = el.getAttribute('data-panel') !== panel;
    });
    document.querySelectorAll('.notice').forEach(function (el) { el.hidden = true; });
    state = panel === 'expired' ? 'pix_expired' : panel;
    root.setAttribute('data-state', state);
  }

  function fillOrder(o) {
    var box = document.querySelector('[data-order]');
    if (!o || !box) { return; }
    box.querySelector('[data-order-label]').textContent = o.label || o.id;
    var link = box.querySelector('[data-order-link]');
    // Only http(s) or same-origin links, never javascript: and the like.
    if (link && o.permalink_url && /^(https?:\/\/|\/(?!\/))/i.test(o.permalink_url)) {
      link.href = o.permalink_url;
      link.hidden = false;
    }
    box.hidden = false;
  }

  // apply reacts to a new state; it returns whether to keep polling.
  function apply(s) {
    if (s.state === state) { return true; }
    if (state === 'pix_pending' && s.state === 'paid' && document.querySelector('[data-panel="paid"]')) {
      fillOrder(s.order);
      show('paid');
      return false;
    }
    if (state === 'pix_pending' && s.state === 'pix_expired' && document.querySelector('[data-panel="expired"]')) {
      show('expired');
      return true; // a new Pix may come: that one reloads the page
    }
    // Anything else: the server renders the new state.
    window.location.reload();
    return false;
  }

  function schedule(ms) {
    if (!stopped && !timer) { timer = setTimeout(poll, ms); }
  }

  function poll() {
    timer = null;
    if (stopped || inflight || document.hidden) { return; }
    if (Date.now() - started > MAX_MS) { stopped = true; return; }
    inflight = true;
    fetch(url, { cache: 'no-store', credentials: 'same-origin', headers: { 'Accept': 'application/json' } })
      .then(function (r) {
        if (r.status === 404) { stopped = true; return null; }
        if (!r.ok) { throw new Error('status ' + r.status); }
        return r.json();
      })
      .then(function (s) {
        inflight = false;
        failures = 0;
        if (s && apply(s)) { schedule(INTERVAL); }
      })
      .catch(function () {
        inflight = false;
        failures++;
        schedule(Math.min(30000, INTERVAL * Math.pow(2, failures)));
      });
  }

  // Hidden tabs stop polling; coming back checks at once.
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && !timer) { poll(); }
  });
  schedule(INTERVAL);
})();
