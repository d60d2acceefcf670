/* ctx view: draws the JSON in #ctx-data (or fetched from the local server).
 * Transcript content is untrusted: every string reaches the page through textContent or an
 * attribute set by name (never innerHTML); links are made only for http(s) URLs. */
(function () {
  'use strict';
  var TIMES = window.__ctxTimes = { start: performance.now() };  // read by benchmarks/bench_view.py
  var RAW = JSON.parse(document.getElementById('ctx-data').textContent);
  TIMES.parsed = performance.now();
  var SERVED = RAW.mode === 'served';
  var ROW = 22, LANE = 12, TURN_PAGE = 40;
  var app = document.getElementById('app');
  var cache = {};
  var V = null; // the session view's state

  // -- DOM helpers -----------------------------------------------------------------------
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === 'class') el.className = attrs[k];
        else if (k === 'text') el.textContent = attrs[k];
        else if (k === 'onclick') el.addEventListener('click', attrs[k]);
        else if (k === 'href') el.setAttribute('href', safeHref(attrs[k]));
        else if (/^(id|title|type|value|placeholder|tabindex|open|colspan|selected|data-[a-z-]+|rel|target)$/.test(k)) el.setAttribute(k, String(attrs[k]));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  function safeHref(u) {
    u = String(u);
    if (u.charAt(0) === '#') return u;
    return /^https?:\/\//i.test(u) ? u : '#';
  }
  var SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs) {
    var el = document.createElementNS(SVG, tag);
    for (var k in attrs) el.setAttribute(k, String(attrs[k]));
    return el;
  }
  function short(id) { return String(id || '').slice(0, 12); }
  function num(n) { return (n || 0).toLocaleString('en-US'); }
  function firstLine(t, w) {
    t = String(t || '').trim().split('\n')[0] || '';
    w = w || 120;
    return t.length > w ? t.slice(0, w - 1) + '…' : t;
  }
  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 1); } catch (e) { return text; }
  }
  function jsonText(v) { return typeof v === 'string' ? v : JSON.stringify(v, null, 1); }

  // -- a small safe markdown subset, built as DOM nodes --------------------------------------
  function md(text) {
    var frag = document.createDocumentFragment();
    text = String(text || '');
    if (text.length > 60000) { frag.appendChild(h('pre', null, text)); return frag; }
    var lines = text.split('\n'), i = 0, para = [], list = null;
    function flush() {
      if (para.length) { frag.appendChild(inline(h('p'), para.join('\n'))); para = []; }
      list = null;
    }
    while (i < lines.length) {
      var line = lines[i], m;
      if ((m = /^\s*(```+|~~~+)\s*([\w+-]*)/.exec(line))) {
        flush();
        var fence = m[1], body = [];
        i++;
        while (i < lines.length && lines[i].trim().indexOf(fence) !== 0) { body.push(lines[i]); i++; }
        i++;
        var code = h('code', null, body.join('\n'));
        if (m[2]) code.setAttribute('data-lang', m[2]);
        frag.appendChild(h('pre', null, code));
        continue;
      }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { flush(); frag.appendChild(inline(h('h4'), m[2])); i++; continue; }
      if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
        if (para.length) { frag.appendChild(inline(h('p'), para.join('\n'))); para = []; }
        var ordered = /\d/.test(m[1]);
        if (!list || list.tagName !== (ordered ? 'OL' : 'UL')) { list = h(ordered ? 'ol' : 'ul'); frag.appendChild(list); }
        list.appendChild(inline(h('li'), m[2]));
        i++; continue;
      }
      if (!line.trim()) { flush(); i++; continue; }
      list = null;
      para.push(line); i++;
    }
    flush();
    return frag;
  }
  var INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\[[^\]\n]+\]\([^)\s]+\))/g;
  function inline(el, text) {
    var last = 0, m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(text))) {
      if (m.index > last) el.appendChild(document.createTextNode(text.slice(last, m.index)));
      if (m[1]) el.appendChild(h('code', null, m[1].slice(1, -1)));
      else if (m[2]) el.appendChild(h('strong', null, m[2].slice(2, -2)));
      else {
        var lm = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(m[3]);
        if (/^https?:\/\//i.test(lm[2])) el.appendChild(h('a', { href: lm[2], rel: 'noopener noreferrer nofollow', target: '_blank', title: lm[2] }, lm[1]));
        else el.appendChild(document.createTextNode(m[3]));
      }
      last = INLINE.lastIndex;
    }
    if (last < text.length) el.appendChild(document.createTextNode(text.slice(last)));
    return el;
  }

  // -- data access (embedded, or the local server) -------------------------------------------
  function api(path) {
    return fetch(path, { credentials: 'same-origin' }).then(function (r) {
      if (!r.ok) throw new Error(r.status + ' ' + path);
      return r.json();
    });
  }
  function getSession(sid) {
    if (cache[sid]) return Promise.resolve(cache[sid]);
    if (RAW.data && RAW.data[sid]) { cache[sid] = prepare(RAW.data[sid]); TIMES.prepared = performance.now(); return Promise.resolve(cache[sid]); }
    if (!SERVED) return Promise.reject(new Error('session ' + short(sid) + ' is not in this export (ctx view ' + short(sid) + ' -o FILE, or ctx view --serve)'));
    return api('/api/session/' + sid).then(function (d) { cache[sid] = prepare(d); return cache[sid]; });
  }
  function stateAt(S, i) {
    var r = S.events[i];
    if (SERVED && S.states == null) return api('/api/state/' + r.id).then(function (st) { return { state: st, at: i, exact: true }; });
    var j = i;
    while (j >= 0 && S.events[j].si == null) { var p = S.events[j].p; j = p.length ? p[0] : -1; }
    if (j < 0) return Promise.resolve(null);
    var T = S.states, idx = T.states[S.events[j].si], st = {};
    T.fields.forEach(function (f, k) { st[f] = T.values[idx[k]]; });
    return Promise.resolve({ state: st, at: j, exact: j === i });
  }
  function getArtifact(S, aid) {
    if (S.artifacts[aid] && S.artifacts[aid].text != null && !S.artifacts[aid].truncated) return Promise.resolve(S.artifacts[aid]);
    if (SERVED) return api('/api/artifact/' + aid);
    return Promise.resolve(S.artifacts[aid] || null);
  }

  // the session's derived structures: children, chains, turns
  // rows leave out what follows from a linear history (model.py _compact_rows): put it back
  function prepare(S) {
    var ev = S.events, NONE = [];
    S.kids = new Array(ev.length);
    for (var i = 0; i < ev.length; i++) {
      var r0 = ev[i];
      if (!r0.p) r0.p = i ? [i - 1] : NONE;
      var p = r0.p;
      for (var k = 0; k < p.length; k++) (S.kids[p[k]] || (S.kids[p[k]] = [])).push(i);
    }
    S.maxLane = 0;
    for (i = 0; i < ev.length; i++) {
      var r = ev[i];
      if (r.c == null) r.c = 0;
      if (!r.th) r.th = NONE;
      if (!r.up) r.up = r.p.length ? [r.c] : NONE;
      if (!r.dn) r.dn = S.kids[i] ? [r.c] : NONE;
      var m = r.c;
      for (k = 0; k < r.th.length; k++) if (r.th[k] > m) m = r.th[k];
      for (k = 0; k < r.up.length; k++) if (r.up[k] > m) m = r.up[k];
      for (k = 0; k < r.dn.length; k++) if (r.dn[k] > m) m = r.dn[k];
      if (m > S.maxLane) S.maxLane = m;
    }
    return S;
  }
  function rowOf(S, id) {
    if (!S.byId) { S.byId = {}; for (var i = 0; i < S.events.length; i++) S.byId[S.events[i].id] = i; }
    return S.byId[id];
  }
  function chainOf(S, tip) {
    var out = [], i = tip;
    while (i != null && i >= 0) { out.push(i); var p = S.events[i].p; i = p.length ? p[0] : null; }
    return out.reverse();
  }
  function turnsOf(S, chain) {
    var turns = [], cur = null;
    chain.forEach(function (i) {
      if (!cur || S.events[i].t === 'UserPromptSubmitted') { cur = { start: i, events: [] }; turns.push(cur); }
      cur.events.push(i);
    });
    return turns;
  }
  function ancestors(S, i) {
    var seen = new Uint8Array(S.events.length), stack = [i];
    while (stack.length) {
      var x = stack.pop();
      if (seen[x]) continue;
      seen[x] = 1;
      var p = S.events[x].p;
      for (var k = 0; k < p.length; k++) if (!seen[p[k]]) stack.push(p[k]);
    }
    return seen;
  }

  // -- routing --------------------------------------------------------------------------------
  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
      else if (kv) out[kv] = '';
    });
    return out;
  }
  function setHash(obj, replace) {
    var h2 = '#' + Object.keys(obj).map(function (k) { return k + '=' + encodeURIComponent(obj[k]); }).join('&');
    if (location.hash === h2) return;
    if (replace) history.replaceState(null, '', h2); else history.pushState(null, '', h2);
  }
  function navigate(obj) { setHash(obj, false); route(); }
  function findEvent(prefix) {
    prefix = String(prefix).toLowerCase();
    var sids = Object.keys(RAW.data || {});
    for (var n = 0; n < sids.length; n++) {
      var evs = RAW.data[sids[n]].events;
      for (var i = 0; i < evs.length; i++) if (evs[i].id.indexOf(prefix) === 0) return Promise.resolve(sids[n]);
    }
    if (SERVED) return api('/api/locate/' + encodeURIComponent(prefix)).then(function (d) { return d.session; });
    return Promise.reject(new Error('no event ' + prefix + ' in this export'));
  }
  function route() {
    var q = parseHash();
    var done;
    if (q.compare != null) done = getSession(q.compare).then(function (S) { renderCompare(S, q.a, q.b); });
    else if (q.session) done = getSession(q.session).then(function (S) { renderSession(S, q); });
    else if (q.event) done = findEvent(q.event).then(function (sid) { return getSession(sid).then(function (S) { renderSession(S, q); }); });
    else if (q.sessions != null || !RAW.start) done = renderSessions();
    else { location.replace(RAW.start); return; }
    Promise.resolve(done).then(ready, function (e) { fail(e); ready(); });
  }
  function fail(e) {
    app.textContent = '';
    app.appendChild(h('p', { class: 'err' }, String(e && e.message || e)));
    app.appendChild(h('p', null, h('a', { href: '#sessions' }, 'All sessions')));
  }
  function ready() {
    requestAnimationFrame(function () {
      if (!window.__ctxFirstRender) window.__ctxFirstRender = TIMES.drawn = performance.now();
      document.body.setAttribute('data-ready', '1');
    });
  }

  // -- the sessions list ----------------------------------------------------------------------
  function renderSessions() {
    V = null;
    var where = document.getElementById('where');
    where.textContent = RAW.store || '';
    app.textContent = '';
    var rows = RAW.sessions || [];
    var formats = {};
    rows.forEach(function (r) { formats[r.format] = 1; });
    var search = h('input', { type: 'search', id: 'session-search', placeholder: 'search title, goal, cwd, id' });
    var fmt = h('select', { id: 'format-filter' }, h('option', { value: '' }, 'all formats'),
      Object.keys(formats).sort().map(function (f) { return h('option', { value: f }, f); }));
    var count = h('span', { class: 'muted', id: 'session-count' });
    var tbody = h('tbody');
    var table = h('table', { class: 'list', id: 'sessions' },
      h('thead', null, h('tr', null, ['Title', 'Format', 'cwd', 'Events', 'Tokens in/out', 'Branches', 'Kind', 'Last activity'].map(function (t, i) {
        return h('th', { class: (i === 3 || i === 4 || i === 5) ? 'num' : '' }, t);
      }))), tbody);
    function draw() {
      var q = search.value.toLowerCase(), f = fmt.value, n = 0;
      tbody.textContent = '';
      rows.forEach(function (r) {
        if (f && r.format !== f) return;
        if (q && [r.title, r.goal, r.cwd, r.id].join('\n').toLowerCase().indexOf(q) < 0) return;
        n++;
        var title = h('td', null, r.depth ? h('span', { class: 'muted' }, '\u00a0\u00a0'.repeat(r.depth) + '└ ') : null,
          h('a', { href: '#session=' + r.id, 'data-session': r.id }, r.title || '(untitled)'),
          r.tags && r.tags.length ? h('span', { class: 'muted' }, '  ' + r.tags.join(' ')) : null);
        tbody.appendChild(h('tr', { 'data-session': r.id }, title, h('td', null, r.format), h('td', { class: 'mono' }, r.cwd),
          h('td', { class: 'num' }, num(r.events)),
          h('td', { class: 'num' }, r.tokens ? num(r.tokens.input) + ' / ' + num(r.tokens.output) : ''),
          h('td', { class: 'num' }, String(r.branch_count)), h('td', null, r.kind + (r.children && r.children.length ? ' (' + r.children.length + ' subagent' + (r.children.length > 1 ? 's' : '') + ')' : '')),
          h('td', { class: 'mono' }, r.last_activity)));
      });
      count.textContent = n + ' of ' + rows.length + ' sessions';
    }
    search.addEventListener('input', draw);
    fmt.addEventListener('change', draw);
    app.appendChild(h('div', { class: 'filters' }, search, fmt, count));
    app.appendChild(table);
    draw();
  }

  // -- one session ----------------------------------------------------------------------------
  function renderSession(S, q) {
    document.getElementById('where').textContent = S.title;
    var names = Object.keys(S.branches).sort(function (a, b) { return a === 'main' ? -1 : b === 'main' ? 1 : a < b ? -1 : 1; });
    var target = null;
    if (q.event) {
      var pre = String(q.event).toLowerCase();
      for (var i = 0; i < S.events.length; i++) if (S.events[i].id.indexOf(pre) === 0) { target = i; break; }
    }
    var branch = q.branch && S.branches[q.branch] != null ? q.branch : null;
    if (!branch && target != null) {
      // the branch whose own line (first parents) holds the event, else one that reaches it
      for (var n = 0; n < names.length && !branch; n++) if (chainOf(S, S.branches[names[n]]).indexOf(target) >= 0) branch = names[n];
      for (n = 0; n < names.length && !branch; n++) if (ancestors(S, S.branches[names[n]])[target]) branch = names[n];
    }
    branch = branch || names[0];
    if (target == null && q.event) throw new Error('no event ' + q.event + ' in session ' + short(S.id));
    var same = V && V.S === S && V.branch === branch && document.getElementById('graph');
    if (!same) buildSessionView(S, branch, names);
    if (target != null) select(target, { scroll: true, keepHash: true });
    else if (!same) setHash({ session: S.id, branch: branch }, true);
  }

  function buildSessionView(S, branch, names) {
    var chain = chainOf(S, S.branches[branch]);
    var onChain = new Uint8Array(S.events.length);
    chain.forEach(function (i) { onChain[i] = 1; });
    var turns = turnsOf(S, chain);
    var turnOf = new Int32Array(S.events.length).fill(-1);
    turns.forEach(function (t, k) { t.events.forEach(function (i) { turnOf[i] = k; }); });
    V = { S: S, branch: branch, chain: chain, onChain: onChain, turns: turns, turnOf: turnOf, sel: null, turn: 0, from: 0, to: 0 };
    app.textContent = '';
    var bsel = h('select', { id: 'branch-select' }, names.map(function (nm) { return h('option', { value: nm, selected: nm === branch ? 'selected' : null }, nm); }));
    bsel.addEventListener('change', function () { navigate({ session: S.id, branch: bsel.value }); });
    var ca = h('select', { id: 'compare-a' }, names.map(function (nm) { return h('option', { value: nm }, nm); }));
    var cb = h('select', { id: 'compare-b' }, names.map(function (nm, k) { return h('option', { value: nm, selected: k === 1 ? 'selected' : null }, nm); }));
    var prompts = 0;
    S.events.forEach(function (r) { if (r.t === 'UserPromptSubmitted') prompts++; });
    app.appendChild(h('div', { class: 'session-head' },
      h('h2', { id: 'session-title' }, S.title || '(untitled)'),
      h('span', { class: 'muted' }, S.format + (S.cwd ? ' · ' + S.cwd : '') + ' · ' + short(S.id)),
      h('span', null, h('b', { id: 'event-count' }, String(S.events.length)), ' events · ',
        h('b', { id: 'branch-count' }, String(names.length)), ' branches · ',
        h('b', { id: 'turn-count' }, String(turns.length)), ' turns on ', bsel),
      h('span', { class: 'controls' }, 'compare ', ca, ' .. ', cb, ' ',
        h('button', { id: 'compare-go', onclick: function () { navigate({ compare: S.id, a: ca.value, b: cb.value }); } }, 'Compare')),
      S.parent ? h('a', { id: 'parent-link', href: '#session=' + S.parent + (S.spawn_event ? '&event=' + S.spawn_event : '') }, 'spawned by ' + short(S.parent)) : null,
      subagentLinks(S),
      h('a', { href: '#sessions' }, 'all sessions')));
    app.appendChild(chart(S, chain));
    var graph = h('div', { id: 'graph', tabindex: '0' }, h('div', { class: 'inner' }));
    var transcript = h('div', { id: 'transcript' });
    var detail = h('div', { id: 'detail' }, h('p', { class: 'muted' }, 'Select an event (click a node or a message).'));
    app.appendChild(h('div', { class: 'layout' }, graph, transcript, detail));
    setupGraph(graph);
    renderTurns(0);
  }

  function subagentLinks(S) {
    var row = (RAW.sessions || []).filter(function (r) { return r.id === S.id; })[0];
    if (!row || !row.children || !row.children.length) return null;
    var byId = {};
    (RAW.sessions || []).forEach(function (r) { byId[r.id] = r; });
    return h('span', { id: 'subagents' }, 'subagents: ', row.children.map(function (c) {
      return h('a', { href: '#session=' + c, 'data-session': c, title: c }, firstLine((byId[c] || {}).title || short(c), 40) + ' ');
    }));
  }

  // token usage over the branch: provider-reported input (context size) and output per response
  function chart(S, chain) {
    var pts = [], comps = [];
    chain.forEach(function (i, x) {
      var r = S.events[i];
      if (r.u && (r.u[0] || r.u[1])) pts.push([x, r.u[0], r.u[1]]);
      if (r.k) comps.push(x);
    });
    var W = Math.max(600, (app.clientWidth || 1200) - 28), H = 120, pad = 44;
    var svg = s('svg', { id: 'chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img' });
    if (!pts.length) {
      var t = s('text', { x: 10, y: 20 });
      t.textContent = 'token usage: n/a (no provider usage or recorded context builds on this branch)';
      svg.appendChild(t);
      svg.setAttribute('height', 30); svg.setAttribute('viewBox', '0 0 ' + W + ' 30');
      return svg;
    }
    var maxY = 1;
    pts.forEach(function (p) { maxY = Math.max(maxY, p[1], p[2]); });
    var n = Math.max(1, chain.length - 1);
    var all = pts.length;
    if (pts.length > W) {  // one point per pixel column: the largest input there
      var cols = {};
      pts.forEach(function (p) { var k = Math.round(p[0] * W / n); if (!cols[k] || cols[k][1] < p[1]) cols[k] = p; });
      pts = Object.keys(cols).map(function (k) { return cols[k]; }).sort(function (a, b) { return a[0] - b[0]; });
    }
    function X(x) { return pad + (W - pad - 6) * x / n; }
    function Y(y) { return H - 16 - (H - 26) * y / maxY; }
    comps.forEach(function (x) { svg.appendChild(s('line', { class: 'cmark', x1: X(x), x2: X(x), y1: 6, y2: H - 14 })); });
    var din = pts.map(function (p) { return X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1); }).join(' ');
    var dout = pts.map(function (p) { return X(p[0]).toFixed(1) + ',' + Y(p[2]).toFixed(1); }).join(' ');
    svg.appendChild(s('polyline', { class: 's-in', points: din }));
    svg.appendChild(s('polyline', { class: 's-out', points: dout }));
    [[maxY, 10], [0, H - 14]].forEach(function (a) { var t = s('text', { x: 2, y: a[1] }); t.textContent = num(a[0]); svg.appendChild(t); });
    var lg = s('text', { x: pad + 6, y: H - 2 });
    lg.textContent = 'input tokens (blue) · output (orange) · compactions (dashed) · ' + all + ' responses';
    svg.appendChild(lg);
    svg.setAttribute('data-points', all);
    return svg;
  }

  // the DAG, one row per event, only the rows on screen in the DOM
  function setupGraph(box) {
    var S = V.S, inner = box.firstChild;
    inner.style.height = (S.events.length * ROW) + 'px';
    var width = (S.maxLane + 1) * LANE + 8;
    function draw() {
      var top = box.scrollTop, h0 = box.clientHeight || 600;
      var a = Math.max(0, Math.floor(top / ROW) - 20), b = Math.min(S.events.length, Math.ceil((top + h0) / ROW) + 20);
      if (V.gfrom === a && V.gto === b) return;
      V.gfrom = a; V.gto = b;
      inner.textContent = '';
      for (var i = a; i < b; i++) inner.appendChild(graphRow(S, i, width));
    }
    V.drawGraph = function () { V.gfrom = -1; draw(); };
    box.addEventListener('scroll', draw);
    draw();
  }
  function graphRow(S, i, width) {
    var r = S.events[i];
    var svg = s('svg', { width: width, height: ROW });
    var mid = ROW / 2;
    function x(c) { return 6 + c * LANE; }
    r.th.forEach(function (c) { svg.appendChild(s('line', { class: 'edge', x1: x(c), y1: 0, x2: x(c), y2: ROW })); });
    r.up.forEach(function (c) { svg.appendChild(s('line', { class: 'edge', x1: x(c), y1: 0, x2: x(r.c), y2: mid })); });
    r.dn.forEach(function (c) { svg.appendChild(s('line', { class: 'edge', x1: x(r.c), y1: mid, x2: x(c), y2: ROW })); });
    svg.appendChild(s('circle', { class: 'node ' + r.t, cx: x(r.c), cy: mid, r: 4 }));
    var row = h('div', { class: 'grow' + (V.sel === i ? ' sel' : ''), 'data-row': i, 'data-event': r.id, title: r.t + ' ' + short(r.id) },
      svg, h('span', { class: 'lbl' }, (r.tip || []).map(function (t) { return h('span', { class: 'tipl' }, t); }),
        h('span', { class: 'ty' }, r.t), r.s));
    row.style.top = (i * ROW) + 'px';
    if (!V.onChain[i]) row.style.opacity = '0.65';
    row.addEventListener('click', function () { select(i, { scroll: true, graph: false }); });
    return row;
  }

  // -- the transcript, rendered a window of turns at a time ---------------------------------
  function renderTurns(from, to) {
    var box = document.getElementById('transcript');
    from = Math.max(0, Math.min(from, V.turns.length - 1));
    to = Math.min(V.turns.length, to == null ? from + TURN_PAGE : to);
    box.textContent = '';
    V.from = from; V.to = from;
    if (from > 0) {
      box.appendChild(stubs('stubs-before', 0, from));
      box.appendChild(h('div', { class: 'more', id: 'more-before' }, h('button', { onclick: function () { renderTurns(Math.max(0, V.from - TURN_PAGE), V.to); } }, 'show ' + Math.min(from, TURN_PAGE) + ' earlier turns')));
    }
    var list = h('div', { id: 'turns' });
    box.appendChild(list);
    appendTurns(to);
  }
  function appendTurns(to) {
    var list = document.getElementById('turns');
    ['more-after', 'stubs-after'].forEach(function (id) { var old = document.getElementById(id); if (old) old.remove(); });
    for (var k = V.to; k < to; k++) list.appendChild(turnEl(k));
    V.to = to;
    if (to < V.turns.length) {
      var more = h('div', { class: 'more', id: 'more-after' }, h('button', { onclick: function () { appendTurns(Math.min(V.turns.length, V.to + TURN_PAGE)); } }, 'show more turns (' + (V.turns.length - to) + ' left)'));
      list.parentNode.appendChild(more);
      list.parentNode.appendChild(stubs('stubs-after', to, V.turns.length));
      if (window.IntersectionObserver) {
        var io = new IntersectionObserver(function (es) {
          if (es[0].isIntersecting) { io.disconnect(); appendTurns(Math.min(V.turns.length, V.to + TURN_PAGE)); }
        });
        io.observe(more);
      }
    }
  }
  function turnTitle(k) {
    var first = V.S.events[V.turns[k].start];
    return 'Turn ' + (k + 1) + ' · ' + (first.t === 'UserPromptSubmitted' ? firstLine(first.s, 90) : first.t);
  }
  // the turns outside the drawn window still show their prompt, so every prompt of the branch
  // is on the page (a turn's other events are drawn when it is opened or scrolled to)
  function stubs(id, from, to) {
    var box = h('div', { id: id });
    for (var k = from; k < to; k++) box.appendChild(stubEl(k));
    return box;
  }
  function stubEl(k) {
    var S = V.S, t = V.turns[k];
    var el = h('section', { class: 'turn stub', 'data-turn': k, id: 'stub-' + k }, h('h3', null, turnTitle(k)));
    if (S.events[t.start].t === 'UserPromptSubmitted') add(el, eventEl(S, t.start, {}));
    var rest = t.events.length - (S.events[t.start].t === 'UserPromptSubmitted' ? 1 : 0);
    if (rest > 0) el.appendChild(h('p', { class: 'muted' }, h('button', { onclick: function () { gotoTurn(k); } }, 'show this turn (' + num(rest) + ' more events)')));
    return el;
  }
  function turnEl(k) {
    var S = V.S, t = V.turns[k];
    var el = h('section', { class: 'turn' + (V.turn === k ? ' cur' : ''), 'data-turn': k, id: 'turn-' + k }, h('h3', null, turnTitle(k)));
    var shown = {};
    t.events.forEach(function (i) { var e = eventEl(S, i, shown); if (e) el.appendChild(e); });
    return el;
  }
  function evBox(S, i, cls) {
    var r = S.events[i];
    var el = h('div', { class: 'ev ' + cls + (V.sel === i ? ' sel' : ''), 'data-event': r.id, 'data-row': i });
    el.addEventListener('click', function (e) {
      if (e.target.closest('button, a, summary')) return;
      select(i, { scroll: false });
    });
    return el;
  }
  function messageBlocks(S, mid, el, skipCalls) {
    var m = S.messages[mid];
    if (!m) return false;
    var any = false;
    m.blocks.forEach(function (b) {
      if (b.type === 'text' || b.type === 'summary') { if (b.text) { el.appendChild(md(b.text)); any = true; } if (b.text_len) el.appendChild(h('p', { class: 'muted' }, '… ' + num(b.text_len) + ' characters in all')); }
      else if (b.type === 'thinking') { el.appendChild(h('details', null, h('summary', { class: 'muted' }, 'thinking'), h('pre', null, b.text || ''))); any = true; }
      else if (b.type === 'image') { el.appendChild(h('p', { class: 'muted' }, '[image ' + (b.media_type || '') + ' ' + short(b.artifact_ref || b.uri) + ']')); any = true; }
      else if (b.type === 'file_ref') { el.appendChild(h('p', { class: 'muted' }, '[file ' + (b.uri || '') + '] ' + (b.summary || ''))); any = true; }
      else if (b.type === 'tool_call' && !skipCalls) { el.appendChild(h('pre', null, b.name + ' ' + (b.args || ''))); any = true; }
    });
    return any;
  }
  function resultText(S, i) {
    var r = S.events[i], m = r.m && S.messages[r.m];
    var out = { text: '', more: 0, art: r.art || '', error: r.t === 'ToolCallFailed' };
    if (m) m.blocks.forEach(function (b) {
      if (b.type === 'tool_result') {
        out.text += b.text || b.preview || '';
        out.more += b.text_len || b.preview_len || 0;
        if (b.output_ref) out.art = b.output_ref;
        if (b.is_error) out.error = true;
        if (b.truncated) out.truncated = true;
      } else if (b.text) out.text += b.text;
    });
    else if (r.pl) out.text = pretty(r.pl);
    return out;
  }
  function artifactButton(S, aid) {
    if (!aid) return null;
    return h('button', { class: 'art-btn', 'data-artifact': aid, onclick: function () { showArtifact(S, aid); } }, 'open artifact ' + short(aid));
  }
  function eventEl(S, i, shown) {
    var r = S.events[i], el;
    if (r.t === 'UserPromptSubmitted' || r.t === 'ModelResponseReceived' || (r.m && !r.call && !r.pair && r.t !== 'ToolCallFinished' && r.t !== 'ToolCallFailed' && !r.k)) {
      if (r.m && shown[r.m]) return null;
      var role = r.m && S.messages[r.m] ? S.messages[r.m].role : (r.t === 'UserPromptSubmitted' ? 'user' : 'assistant');
      var body = document.createDocumentFragment();
      if (!(r.m && messageBlocks(S, r.m, body, true))) {
        if (r.t === 'ModelResponseReceived' && /^\(no text/.test(r.s)) {  // only tool calls follow
          el = evBox(S, i, 'other');
          add(el, [h('span', { class: 'mono' }, r.t), ' ', r.s]);
          return el;
        }
        body.appendChild(md(r.s));
      }
      el = evBox(S, i, 'msg ' + (role === 'user' ? 'user' : 'assistant'));
      el.appendChild(h('div', { class: 'role' }, role + ' · ' + r.t));
      el.appendChild(body);
      if (r.m) shown[r.m] = 1;
      return el;
    }
    if (r.call) {
      el = evBox(S, i, 'tool-pair');
      var st = r.call.status || 'pending';
      var eff = (r.call.effects || []).map(function (e) { return e.kind + (e.path ? ' ' + e.path : '') + (e.summary ? ': ' + e.summary : ''); }).join('; ');
      el.appendChild(h('div', { class: 'hd' }, '⚙ ', r.call.name, ' ', h('span', { class: 'status-' + st }, '[' + st + ']'), eff ? h('span', { class: 'muted' }, ' — ' + eff) : null));
      var m = r.m && S.messages[r.m];
      var args = null;
      if (m) m.blocks.forEach(function (b) { if (b.type === 'tool_call' && b.tool_call_id === r.call.id) args = b.args; });
      el.appendChild(h('details', { class: 'args' }, h('summary', { class: 'muted' }, 'arguments · ' + r.call.id), h('pre', null, args != null ? args : firstLine(r.s, 400))));
      (r.results || []).forEach(function (j) {
        var res = resultText(S, j);
        var big = res.text.length > 1200 || res.more || res.truncated || res.art;
        var body = h('pre', { class: 'result' + (res.error ? ' err' : '') }, big ? res.text.slice(0, 1200) : res.text);
        var box = h('div', { class: 'tool-result', 'data-event': S.events[j].id });
        if (big) {
          box.appendChild(h('details', null, h('summary', null, 'result' + (res.error ? ' (error)' : '') + ' · ' + num(Math.max(res.text.length, res.more)) + ' chars, collapsed'), body,
            res.text.length > 1200 ? h('p', { class: 'muted' }, 'first 1,200 characters shown') : null));
        } else box.appendChild(body);
        add(box, artifactButton(S, res.art));
        el.appendChild(box);
      });
      if (!(r.results || []).length) el.appendChild(h('p', { class: 'status-' + st }, st === 'abandoned' ? 'no result: abandoned' : 'no result yet (pending)'));
      return el;
    }
    if (r.pair != null) return null; // drawn with its call
    if (r.t === 'ToolCallFinished' || r.t === 'ToolCallFailed') {
      el = evBox(S, i, 'tool-pair');
      var res2 = resultText(S, i);
      el.appendChild(h('div', { class: 'hd' }, 'result without a recorded call'));
      el.appendChild(h('pre', null, res2.text.slice(0, 1200)));
      add(el, artifactButton(S, res2.art));
      return el;
    }
    if (r.k && S.compactions[r.k]) return compactionEl(S, i);
    if (r.bd && S.bundles[r.bd]) return bundleEl(S, i);
    el = evBox(S, i, 'other');
    add(el, [h('span', { class: 'mono' }, r.t), ' ', r.s]);
    add(el, artifactButton(S, r.art));
    return el;
  }
  function compactionEl(S, i) {
    var r = S.events[i], c = S.compactions[r.k];
    var el = evBox(S, i, 'compaction');
    el.appendChild(h('div', { class: 'hd' }, (c.kind === 'merge' ? '⇄ Merge of a branch: ' : '▣ Compaction: ') + 'replaced ',
      h('b', { class: 'range-count' }, String(c.source_count)), ' events ', h('span', { class: 'mono' }, short(c.first_event) + ' .. ' + short(c.last_event)),
      ' · ' + num(c.tokens_before) + ' → ' + num(c.tokens_after) + ' tokens'));
    var range = h('ol', { class: 'range' });
    var rangeBox = h('details', { class: 'replaced' }, h('summary', null, 'the exact range it replaced (' + c.source_count + ' events' + (c.first_kept ? ', first kept ' + short(c.first_kept) : '') + ')'), range);
    rangeBox.addEventListener('toggle', function () {
      if (!rangeBox.open || range.childNodes.length) return;
      c.sources.forEach(function (j, n) {
        var id = j >= 0 ? S.events[j].id : (c.source_ids[n] || '');
        range.appendChild(h('li', { 'data-event': id }, h('a', { onclick: function () { if (j >= 0) select(j, { scroll: true }); } }, short(id)), ' ', j >= 0 ? S.events[j].t + ' ' + firstLine(S.events[j].s, 100) : '(not in this session view)'));
      });
    });
    el.appendChild(rangeBox);
    el.appendChild(h('p', { class: 'muted' }, c.provenance.origin === 'import'
      ? 'Made by the harness (' + (c.provenance.summarizer || '?') + '); ctxstore did not check it at import. Its rules, run now on the record:'
      : 'Checks (run before the record was written; run again now on the stored record):'));
    el.appendChild(h('ul', { class: 'checks' }, c.checks.map(function (k) { return h('li', { class: k.status === 'n/a' ? 'na' : k.status }, k.rule + ': ' + k.status + ' — ' + k.detail); })));
    el.appendChild(h('details', { class: 'summary' }, h('summary', null, 'summary (' + (c.provenance.summarizer || '?') + ')'), h('pre', null, c.summary)));
    return el;
  }
  function bundleEl(S, i) {
    var r = S.events[i], b = S.bundles[r.bd];
    var el = evBox(S, i, 'bundle');
    var kept = b.segments.filter(function (x) { return x.kept; }).length;
    el.appendChild(h('div', { class: 'hd' }, '👁 What the model saw: ', num(b.used_tokens) + ' / ' + num(b.max_tokens - b.reserved_output) + ' tokens, ' + kept + ' of ' + b.segments.length + ' segments kept (' + b.tokenizer + ')'));
    var tiers = {};
    b.segments.forEach(function (x) { var t = x.tier == null ? '?' : 'P' + x.tier; tiers[t] = tiers[t] || { k: 0, d: 0 }; tiers[t][x.kept ? 'k' : 'd'] += x.tokens; });
    el.appendChild(h('p', { class: 'muted' }, Object.keys(tiers).sort().map(function (t) { return t + ': ' + num(tiers[t].k) + ' kept, ' + num(tiers[t].d) + ' dropped'; }).join(' · ')));
    var tb = h('tbody');
    b.segments.forEach(function (x, n) {
      var tr = h('tr', { class: 'segment ' + (x.kept ? 'kept' : 'dropped'), 'data-tier': x.tier == null ? '' : 'P' + x.tier },
        h('td', null, x.kept ? (x.trimmed ? 'trimmed' : 'kept') : 'dropped'), h('td', null, x.tier == null ? '?' : 'P' + x.tier), h('td', null, x.kind),
        h('td', { class: 'num' }, num(x.tokens)), h('td', { class: 'reason' }, x.reason),
        h('td', null, x.sources.slice(0, 3).map(function (sid) { return h('a', { class: 'mono', onclick: function () { var j = rowOf(S, sid); if (j != null) select(j, { scroll: true }); } }, short(sid) + ' '); }), x.source_count > 3 ? '+' + (x.source_count - 3) : ''));
      tb.appendChild(tr);
      if (x.text) {
        var d = h('tr', { class: 'segtext' }, h('td', { colspan: 6 }, h('details', null, h('summary', { class: 'muted' }, 'text of segment ' + (n + 1)), h('pre', null, x.text + (x.text_len > x.text.length ? '\n… (' + num(x.text_len) + ' characters in all)' : '')))));
        tb.appendChild(d);
      }
    });
    el.appendChild(h('table', { class: 'segments' }, h('thead', null, h('tr', null, ['', 'tier', 'kind', 'tokens', 'reason', 'sources'].map(function (t) { return h('th', null, t); }))), tb));
    return el;
  }

  // -- selection, details, state --------------------------------------------------------------
  function select(i, opts) {
    opts = opts || {};
    var S = V.S;
    V.sel = i;
    var k = V.turnOf[i];
    setHash({ session: S.id, branch: V.branch, event: S.events[i].id }, true);
    if (k >= 0) {
      V.turn = k;
      if (k < V.from || k >= V.to) renderTurns(Math.max(0, k - 5));
    }
    document.querySelectorAll('.ev.sel, .grow.sel, .turn.cur').forEach(function (e) { e.classList.remove('sel'); e.classList.remove('cur'); });
    if (k >= 0) { var te = document.getElementById('turn-' + k); if (te) te.classList.add('cur'); }
    var evs = document.querySelectorAll('#transcript [data-row="' + i + '"]');
    var target = evs[0];
    if (!target) {
      var r = S.events[i];
      if (r.pair != null) target = document.querySelector('#transcript [data-row="' + r.pair + '"]');
    }
    if (!target && k >= 0) target = document.getElementById('turn-' + k);
    if (target) { if (target.classList.contains('ev')) target.classList.add('sel'); if (opts.scroll !== false) target.scrollIntoView({ block: 'center' }); }
    var box = document.getElementById('graph');
    if (opts.graph !== false) {
      var y = i * ROW;
      if (y < box.scrollTop || y > box.scrollTop + box.clientHeight - ROW) box.scrollTop = Math.max(0, y - box.clientHeight / 2);
    }
    V.drawGraph();
    showDetail(S, i);
  }
  function showDetail(S, i) {
    var r = S.events[i], box = document.getElementById('detail');
    box.textContent = '';
    box.appendChild(h('h3', { id: 'detail-title' }, r.t));
    var dl = h('dl', null,
      h('dt', null, 'id'), h('dd', { class: 'mono', id: 'detail-id' }, r.id),
      h('dt', null, 'actor'), h('dd', null, r.a),
      h('dt', null, 'time'), h('dd', { class: 'mono' }, r.ts),
      h('dt', null, 'generation'), h('dd', null, String(r.g)),
      h('dt', null, 'parents'), h('dd', null, r.p.map(function (p) { return h('a', { class: 'mono', onclick: function () { select(p, { scroll: true }); } }, short(S.events[p].id) + ' '); })),
      (S.kids[i] || []).length ? [h('dt', null, 'children'), h('dd', null, S.kids[i].map(function (c) { return h('a', { class: 'mono', onclick: function () { select(c, { scroll: true }); } }, short(S.events[c].id) + ' '); }))] : null,
      h('dt', null, 'link'), h('dd', null, h('a', { href: '#event=' + r.id }, '#event=' + short(r.id))));
    box.appendChild(dl);
    if (r.pl) box.appendChild(h('details', null, h('summary', null, 'payload'), h('pre', null, pretty(r.pl))));
    add(box, artifactButton(S, r.art));
    var stBox = h('div', { class: 'state', id: 'state' }, h('p', { class: 'muted' }, 'projecting the state…'));
    box.appendChild(h('h3', null, 'Projected state at this event'));
    box.appendChild(stBox);
    box.appendChild(h('div', { id: 'artifact-view' }));
    stateAt(S, i).then(function (res) {
      stBox.textContent = '';
      if (!res) { stBox.appendChild(h('p', { class: 'muted' }, 'n/a: no state recorded in this export')); return; }
      if (!res.exact) stBox.appendChild(h('p', { class: 'muted' }, 'as of ' + short(S.events[res.at].id) + ' (this export keeps the state at turn ends; ctx view --serve or ctx state ' + short(r.id) + ' gives it exactly)'));
      stateEl(stBox, res.state);
    }, function (e) { stBox.textContent = String(e.message || e); });
  }
  function items(v) {
    if (v == null) return [];
    if (Array.isArray(v)) return v;
    return [v];
  }
  function itemText(x) {
    if (x == null) return '';
    if (typeof x !== 'object') return String(x);
    var main = x.text || x.content || x.decision || x.path || x.error || x.check || x.summary || x.name || x.question;
    var rest = [];
    ['status', 'change_summary', 'result', 'confidence', 'rationale'].forEach(function (k) { if (x[k] != null && x[k] !== main) rest.push(k + ': ' + x[k]); });
    return main != null ? String(main) + (rest.length ? ' (' + rest.join(', ') + ')' : '') : JSON.stringify(x);
  }
  function stateEl(box, st) {
    function section(title, list) {
      list = list.filter(function (x) { return x != null && x !== ''; });
      if (!list.length) return;
      box.appendChild(h('section', { 'data-field': title }, h('h4', null, title), h('ul', null, list.map(function (x) { return h('li', null, itemText(x)); }))));
    }
    var g = st.goal || {};
    section('goal', [g.user_goal, g.current_task ? 'current task: ' + g.current_task : null].concat(items(g.acceptance_criteria).map(function (a) { return 'accept: ' + a; })));
    var plan = st.plan || {};
    section('plan' + (plan.status ? ' (' + plan.status + ')' : ''), items(plan.steps).map(function (x) { return '[' + (x.status || '') + '] ' + (x.text || ''); }));
    var c = st.constraints || {};
    section('constraints', items(c.hard).map(function (x) { return 'hard: ' + itemText(x); }).concat(items(c.soft).map(function (x) { return 'soft: ' + itemText(x); })));
    var f = st.files || {};
    section('files', items(f.modified).map(function (x) { return 'modified ' + itemText(x); }).concat(items(f.read).map(function (x) { return 'read ' + itemText(x); })));
    section('facts', items(st.facts));
    section('decisions', items(st.decisions));
    section('errors', items(st.errors));
    section('validations', items(st.validations));
    section('open questions', items(st.open_questions));
    section('subagents', items(st.subagents));
    var tc = st.tool_calls || {};
    section('tool calls', ['completed ' + (tc.completed || 0) + ', failed ' + (tc.failed || 0)]
      .concat(Object.keys(tc.pending || {}).map(function (k) { return 'pending ' + k + ' ' + tc.pending[k]; }))
      .concat(Object.keys(tc.abandoned || {}).map(function (k) { return 'abandoned ' + k + ': ' + tc.abandoned[k]; })));
    if (st.last_compaction) section('last compaction', [short(st.last_compaction)]);
    if (!box.childNodes.length) box.appendChild(h('p', { class: 'muted' }, '(empty state)'));
  }
  function showArtifact(S, aid) {
    var box = document.getElementById('artifact-view') || document.getElementById('detail');
    box.textContent = '';
    box.appendChild(h('p', { class: 'muted' }, 'loading artifact ' + short(aid) + '…'));
    getArtifact(S, aid).then(function (a) {
      box.textContent = '';
      if (!a) { box.appendChild(h('p', { class: 'muted' }, 'artifact ' + short(aid) + ' is not in this export: ctx cat ' + short(aid))); return; }
      box.appendChild(h('h3', { id: 'artifact-title' }, 'Artifact ' + short(aid) + ' · ' + a.kind + ' · ' + num(a.size) + ' bytes'));
      if (a.uri) box.appendChild(h('p', { class: 'mono' }, a.uri));
      if (a.text == null) box.appendChild(h('p', { class: 'muted' }, 'binary or not embedded: ctx cat ' + short(aid)));
      else box.appendChild(h('pre', { id: 'artifact-text' }, a.text));
      if (a.truncated) box.appendChild(h('p', { class: 'muted' }, 'first ' + num((a.text || '').length) + ' characters; all of it: ctx cat ' + short(aid)));
      box.scrollIntoView({ block: 'nearest' });
    }, function (e) { box.textContent = String(e.message || e); });
  }

  // -- two branches side by side --------------------------------------------------------------
  function resolveRev(S, rev) {
    if (rev == null) return null;
    if (S.branches[rev] != null) return S.branches[rev];
    var pre = String(rev).toLowerCase();
    for (var i = 0; i < S.events.length; i++) if (S.events[i].id.indexOf(pre) === 0) return i;
    return null;
  }
  function renderCompare(S, a, b) {
    var ia = resolveRev(S, a), ib = resolveRev(S, b);
    if (ia == null || ib == null) throw new Error('cannot compare ' + a + ' .. ' + b + ' in session ' + short(S.id));
    V = null;
    document.getElementById('where').textContent = S.title;
    app.textContent = '';
    var A = ancestors(S, ia), B = ancestors(S, ib), base = -1;
    for (var i = 0; i < S.events.length; i++) if (A[i] && B[i] && (base < 0 || S.events[i].g >= S.events[base].g)) base = i;
    var onlyA = [], onlyB = [];
    for (i = 0; i < S.events.length; i++) { if (A[i] && !B[i]) onlyA.push(i); if (B[i] && !A[i]) onlyB.push(i); }
    function col(title, id, list) {
      return h('div', { id: id }, h('h3', null, title + ' (' + list.length + ' events only here)'),
        h('ol', null, list.map(function (j) { var r = S.events[j]; return h('li', { 'data-event': r.id }, h('a', { href: '#session=' + S.id + '&event=' + r.id }, short(r.id)), ' ', h('span', { class: 'muted' }, r.t), ' ', firstLine(r.s, 120)); })));
    }
    app.appendChild(h('div', { class: 'session-head' }, h('h2', null, 'Compare ' + a + ' .. ' + b), h('span', { class: 'muted' }, S.title),
      h('span', { id: 'merge-base' }, 'merge base: ', base >= 0 ? h('a', { class: 'mono', href: '#session=' + S.id + '&event=' + S.events[base].id }, short(S.events[base].id)) : 'none'),
      h('a', { href: '#session=' + S.id }, 'back to the session')));
    app.appendChild(h('div', { class: 'compare' }, col(String(a), 'only-a', onlyA), col(String(b), 'only-b', onlyB)));
    var diffBox = h('div', { id: 'state-diff' }, h('p', { class: 'muted' }, 'comparing states…'));
    app.appendChild(h('h3', null, 'How the projected state differs (' + a + ' → ' + b + ')'));
    app.appendChild(diffBox);
    return Promise.all([stateAt(S, ia), stateAt(S, ib)]).then(function (st) {
      diffBox.textContent = '';
      if (!st[0] || !st[1]) { diffBox.appendChild(h('p', { class: 'muted' }, 'n/a: states not in this export')); return; }
      var ul = h('ul');
      var fields = Object.keys(st[0].state).concat(Object.keys(st[1].state)).filter(function (f, n, arr) { return arr.indexOf(f) === n && f !== 'session'; });
      fields.forEach(function (f) { stateDiff(ul, f, st[0].state[f], st[1].state[f]); });
      if (!ul.childNodes.length) ul.appendChild(h('li', { class: 'muted' }, 'no difference'));
      diffBox.appendChild(ul);
    });
  }
  function stateDiff(ul, f, x, y) {
    var sx = JSON.stringify(x), sy = JSON.stringify(y);
    if (sx === sy) return;
    if (x && y && typeof x === 'object' && typeof y === 'object' && !Array.isArray(x)) {
      Object.keys(x).concat(Object.keys(y)).filter(function (k, n, arr) { return arr.indexOf(k) === n; }).forEach(function (k) { stateDiff(ul, f + '.' + k, x[k], y[k]); });
      return;
    }
    if (Array.isArray(x) && Array.isArray(y)) {
      var ax = x.map(function (v) { return JSON.stringify(v); }), ay = y.map(function (v) { return JSON.stringify(v); });
      ay.forEach(function (v, n) { if (ax.indexOf(v) < 0) ul.appendChild(h('li', { class: 'added' }, '+ ' + f + ': ' + itemText(y[n]))); });
      ax.forEach(function (v, n) { if (ay.indexOf(v) < 0) ul.appendChild(h('li', { class: 'removed' }, '- ' + f + ': ' + itemText(x[n]))); });
      return;
    }
    ul.appendChild(h('li', { class: 'changed' }, '~ ' + f + ': ' + firstLine(jsonText(x), 200) + ' → ' + firstLine(jsonText(y), 200)));
  }

  // -- keyboard -------------------------------------------------------------------------------
  function gotoTurn(k) {
    if (!V || !V.turns.length) return;
    k = Math.max(0, Math.min(V.turns.length - 1, k));
    select(V.turns[k].start, { scroll: true });
  }
  function branchPoint() {
    if (!V) return;
    var S = V.S, i = V.sel != null ? V.sel : V.chain[V.chain.length - 1];
    var p = S.events[i].p;
    i = p.length ? p[0] : i;
    while (i != null) {
      var r = S.events[i];
      if ((S.kids[i] || []).length > 1 || r.p.length > 1) { select(i, { scroll: true }); return; }
      i = r.p.length ? r.p[0] : null;
    }
  }
  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'select' || tag === 'textarea') return;
    if (e.key === 'j') { gotoTurn(V ? (V.sel == null ? 0 : V.turn + 1) : 0); e.preventDefault(); }
    else if (e.key === 'k') { gotoTurn(V ? V.turn - 1 : 0); e.preventDefault(); }
    else if (e.key === 'b') { branchPoint(); e.preventDefault(); }
    else if (e.key === '/') { var si = document.getElementById('session-search'); if (si) { si.focus(); e.preventDefault(); } }
  });
  window.addEventListener('beforeprint', function () {
    if (V && V.to < V.turns.length && V.turns.length <= 2000) appendTurns(V.turns.length);
    document.querySelectorAll('#transcript details').forEach(function (d) { d.open = true; });
  });
  window.addEventListener('hashchange', route);
  window.addEventListener('popstate', route);
  window.ctxView = { select: function (i) { select(i, { scroll: true }); }, view: function () { return V; } };
  route();
})();
