"use strict";
// Draws the run tree of the page's data block. Every text goes through textContent: nothing in a run is markup.
(function () {
  var DATA = JSON.parse(document.getElementById("run-data").textContent);
  var PAGE = 100;
  var HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

  function visible(value) {
    var text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    if (text === undefined || text === null) return "";
    return String(text).replace(HIDDEN, function (c) {
      return "\\x" + ("0" + c.charCodeAt(0).toString(16)).slice(-2);
    });
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function block(parent, label, text, cls) {
    if (text === undefined || text === null || text === "") return;
    add(parent, el("div", "label", label));
    add(parent, el("pre", cls || "", text));
  }
  function num(value, digits) {
    return typeof value === "number" ? value.toLocaleString("en-US", { maximumFractionDigits: digits }) : "–";
  }
  function tokens(usage) {
    var total = 0, cost = 0, priced = false;
    if (usage && typeof usage === "object") {
      Object.keys(usage).forEach(function (role) {
        var u = usage[role] || {};
        total += (u.input_tokens || 0) + (u.output_tokens || 0);
        if (typeof u.cost === "number") { cost += u.cost; priced = true; }
      });
    }
    return { total: total, cost: priced ? cost : null };
  }
  function failed(step) {
    var obs = step.observation;
    if (["error", "malformed_reply", "final_rejected", "(unfinished)"].indexOf(step.action) >= 0) return true;
    if (obs && typeof obs === "object") {
      if (obs.success === false) return true;
      if ((obs.blocks || []).some(function (b) { return b && b.error; })) return true;
    }
    return (step.events || []).some(function (e) { return e.type === "error"; });
  }

  function header(run, parent, isRoot) {
    var start = run.start || {}, fin = run.final || {};
    var box = add(parent, el("section"));
    add(box, el(isRoot ? "h1" : "h2", "", (isRoot ? "Run " : "Child run ") + run.id));
    var meta = add(box, el("div", "meta"));
    [["model", start.model], ["sub-model", start.sub_model], ["environment", start.environment],
     ["framework", start.framework], ["sandbox", start.sandbox], ["depth", run.depth]].forEach(function (pair) {
      if (pair[1] !== undefined && pair[1] !== null) add(meta, el("span", "", pair[0] + ": " + pair[1]));
    });
    var totals = add(box, el("div", "meta"));
    var used = tokens(fin.usage);
    [["steps", fin.steps !== undefined ? fin.steps : run.steps.length], ["reward", num(fin.total_reward, 3)],
     ["tokens", num(used.total, 0)], ["cost", used.cost === null ? "–" : "$" + used.cost.toFixed(4)],
     ["seconds", num(fin.duration_s, 2)], ["ended", fin.termination_reason || (run.final ? "" : "not recorded")]
    ].forEach(function (pair) { add(totals, el("span", "", pair[0] + ": " + pair[1])); });
    add(box, el("div", "label", "task"));
    add(box, el("div", "task", start.question || start.task || ""));
    (start.notices || []).forEach(function (n) { add(box, el("div", "notice", "! " + n)); });
    if (fin.error) add(box, el("pre", "err", fin.error));
    add(box, el("div", "label", "answer"));
    var answer = fin.final_response;
    add(box, el("div", answer === null || answer === undefined ? "answer none" : "answer",
                answer === null || answer === undefined ? "(no answer)" : answer));
    if (fin.output !== undefined && fin.output !== null) block(box, "typed output", fin.output);
  }

  function subCall(parent, call) {
    var name = call.kind === "tool_call" ? call.tool : (call.model || "");
    var row = add(parent, el("details", call.error ? "error" : ""));
    var s = add(row, el("summary", "", "↳ " + call.kind + " " + name + " · " + num(call.seconds, 2) + "s" +
                        (call.error ? " · error" : "")));
    if (call.child_run_id) add(s, el("span", "tag", "child run " + call.child_run_id));
    row.addEventListener("toggle", function once() {
      row.removeEventListener("toggle", once);
      var body = add(row, el("div", "body"));
      block(body, call.kind === "tool_call" ? "arguments" : "prompt", call.arguments || call.prompt);
      block(body, call.kind === "tool_call" ? "result" : "response", call.result || call.response_full || call.response);
      block(body, "error", call.error, "err");
      if (call.usage) block(body, "usage", call.usage);
    });
  }

  function variables(parent, list) {
    if (!list || !list.length) return;
    add(parent, el("div", "label", "REPL variables"));
    var table = add(parent, el("table"));
    var head = add(table, el("tr"));
    ["name", "type", "size", "value"].forEach(function (h) { add(head, el("th", "", h)); });
    list.forEach(function (v) {
      var tr = add(table, el("tr"));
      add(tr, el("td", "", v.name)); add(tr, el("td", "", v.type));
      add(tr, el("td", "", v.size === undefined ? "" : v.size)); add(tr, el("td", "v", v.repr));
    });
  }

  function stepBody(run, step, body) {
    block(body, "reply", step.reply);
    var obs = step.observation;
    var blocks = obs && typeof obs === "object" && Array.isArray(obs.blocks) ? obs.blocks : [];
    if (!blocks.length) block(body, "code", step.code);
    blocks.forEach(function (b, i) {
      var n = blocks.length > 1 ? " " + (i + 1) : "";
      block(body, "code" + n, b.code);
      block(body, "output" + n, b.stdout);
      block(body, "stderr" + n, b.stderr, "err");
      block(body, "error" + n, b.error, "err");
    });
    if (obs && typeof obs === "object") {
      variables(body, obs.variables);
      var rest = {};
      Object.keys(obs).forEach(function (k) { if (k !== "blocks" && k !== "variables") rest[k] = obs[k]; });
      if (Object.keys(rest).length) block(body, "observation", rest, obs.success === false ? "err" : "");
    } else if (obs !== undefined && obs !== null) {
      block(body, "observation", obs);
    }
    (step.events || []).forEach(function (e) {
      if (e.type === "branch") return;
      block(body, e.type, e, e.type === "error" ? "err" : "");
    });
    var branches = (step.events || []).filter(function (e) { return e.type === "branch"; });
    if (branches.length) {
      add(body, el("div", "label", "candidates (" + branches.length + ")"));
      branches.forEach(function (b) {
        var d = add(body, el("details", b.chosen ? "" : ""));
        var s = add(d, el("summary", "", "candidate " + (b.candidate !== undefined ? b.candidate : "") +
                          " · score " + num(b.score, 3)));
        if (b.chosen) add(s, el("span", "tag chosen", "kept"));
        var inner = add(d, el("div", "body"));
        block(inner, "reply", b.reply); block(inner, "code", b.code); block(inner, "output", b.output);
        block(inner, "error", b.error, "err");
      });
    }
    if ((step.sub_calls || []).length) {
      add(body, el("div", "label", "sub-calls (" + step.sub_calls.length + ")"));
      step.sub_calls.forEach(function (c) { subCall(body, c); });
    }
    (step.children || []).forEach(function (id) {
      var child = DATA.runs[id];
      if (!child) return;
      var box = add(body, el("div", "child"));
      drawRun(child, box, false);
    });
    if (step.extra && Object.keys(step.extra).length) block(body, "more", step.extra);
  }

  function stepRow(run, step) {
    var bad = failed(step);
    var row = el("details", bad ? "error" : "");
    row.id = run.id + "-step-" + step.step;
    var used = tokens(step.usage);
    var text = "step " + (step.step === null ? "–" : step.step) + " · " + step.action +
      (typeof step.reward === "number" ? " · reward " + (step.reward >= 0 ? "+" : "") + step.reward.toFixed(2) : "") +
      " · " + num(used.total, 0) + " tokens" + (used.cost === null ? "" : " · $" + used.cost.toFixed(4)) +
      (typeof step.duration_s === "number" ? " · " + step.duration_s.toFixed(2) + "s" : "");
    var summary = add(row, el("summary", "", text));
    if (bad) add(summary, el("span", "tag bad", "error"));
    if ((step.sub_calls || []).length) add(summary, el("span", "tag", step.sub_calls.length + " sub-call(s)"));
    if ((step.children || []).length) add(summary, el("span", "tag", step.children.length + " child run(s)"));
    var drawn = false;
    row.drawBody = function () {  // drawn when first opened: a long run stays light
      if (drawn) return;
      drawn = true;
      stepBody(run, step, add(row, el("div", "body")));
    };
    row.addEventListener("toggle", row.drawBody);
    return row;
  }

  function drawRun(run, parent, isRoot) {
    header(run, parent, isRoot);
    var steps = run.steps || [];
    add(parent, el("div", "label", "steps (" + steps.length + ")"));
    var state = { page: 0, errorsOnly: false };
    var pager = add(parent, el("div", "pager"));
    var list = add(parent, el("div"));
    var prev = add(pager, el("button", "", "‹ previous"));
    var where = add(pager, el("span"));
    var next = add(pager, el("button", "", "next ›"));
    var jump = add(pager, el("input"));
    jump.placeholder = "step #";
    var only = add(pager, el("label"));
    var box = add(only, el("input"));
    box.type = "checkbox";
    add(only, document.createTextNode(" only steps with errors"));
    function shown() { return state.errorsOnly ? steps.filter(failed) : steps; }
    function draw() {
      var rows = shown(), pages = Math.max(1, Math.ceil(rows.length / PAGE));
      state.page = Math.min(Math.max(0, state.page), pages - 1);
      list.textContent = "";
      rows.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (s) { list.appendChild(stepRow(run, s)); });
      where.textContent = "page " + (state.page + 1) + " of " + pages + " (" + rows.length + " steps)";
      prev.disabled = state.page === 0; next.disabled = state.page >= pages - 1;
      pager.style.display = rows.length > PAGE || state.errorsOnly || steps.some(failed) ? "" : "none";
    }
    prev.addEventListener("click", function () { state.page -= 1; draw(); });
    next.addEventListener("click", function () { state.page += 1; draw(); });
    box.addEventListener("change", function () { state.errorsOnly = box.checked; state.page = 0; draw(); });
    function show(n) {
      var rows = shown(), at = rows.findIndex(function (s) { return s.step === n; });
      if (at < 0) return false;
      state.page = Math.floor(at / PAGE); draw();
      var row = document.getElementById(run.id + "-step-" + n);
      if (row) { row.drawBody(); row.open = true; row.scrollIntoView(); }
      return true;
    }
    jump.addEventListener("change", function () { show(parseInt(jump.value, 10)); });
    SHOW[run.id] = show;
    draw();
  }

  var SHOW = {};  // run id → the function that opens one of its steps (runs drawn so far)
  function openStep(runId, n) {
    var chain = [], run = DATA.runs[runId];
    while (run && run.parent && DATA.runs[run.parent]) { chain.unshift(run); run = DATA.runs[run.parent]; }
    chain.forEach(function (child) {  // open the parent steps that hold each child run, outermost first
      var parent = DATA.runs[child.parent];
      var holder = (parent.steps || []).find(function (s) { return (s.children || []).indexOf(child.id) >= 0; });
      if (holder && SHOW[parent.id]) SHOW[parent.id](holder.step);
    });
    if (SHOW[runId]) SHOW[runId](n);
  }

  var app = document.getElementById("app");
  var root = DATA.root && DATA.runs[DATA.root];
  if (!root) { app.appendChild(el("p", "", "This run has no events.")); return; }
  drawRun(root, app, true);
  // page.html#step-12 (or #<run id>-step-12 for a child run's) opens that step: a link to one step to send
  var wanted = /^#(?:(.+)-)?step-(\d+)$/.exec(window.location.hash);
  if (wanted) openStep(wanted[1] || root.id, parseInt(wanted[2], 10));
  document.body.setAttribute("data-drawn", "yes");
})();
