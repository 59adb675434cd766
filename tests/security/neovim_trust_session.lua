-- One headless Neovim session on a hostile repository, driven by tests/security/test_trust_neovim.py.
--
-- Environment:
--   FABRIC_NVIM_CONFIG       Lua file holding the README's Neovim configuration, sourced as a user would.
--   FABRIC_NVIM_FILE         the Python file to open (train.py of the hostile repository).
--   FABRIC_NVIM_MARKER       the file the repository's programs write when they are run.
--   FABRIC_NVIM_WAIT_MS      how long to wait for each step (attach, diagnostics, re-check).
--   FABRIC_NVIM_WAIT_MARKER  "1": before stopping, wait (bounded) for the marker to appear.
--
-- It does what a user does (open the file, see the diagnostic, `K`, `gra`, fix-all, apply the fix),
-- records after each step whether the marker exists, and writes one JSON object to stdout. The
-- Python test makes the assertions. Every path ends in `cquit`: an uncaught error in a headless
-- session hangs until the outer `timeout`.

local wait_ms = tonumber(os.getenv("FABRIC_NVIM_WAIT_MS") or "20000")
local marker = assert(os.getenv("FABRIC_NVIM_MARKER"), "FABRIC_NVIM_MARKER is not set")
local result = { steps = {}, marker_after = {}, show_messages = {} }

local function marker_exists()
  return vim.uv.fs_stat(marker) ~= nil
end

local function step(name)
  table.insert(result.steps, name)
  result.marker_after[name] = marker_exists()
end

local function emit_and_quit(code)
  io.stdout:write(vim.json.encode(result) .. "\n")
  io.stdout:flush()
  vim.cmd("cquit " .. code)
end

local show_message = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, params, ctx, config)
  table.insert(result.show_messages, { type = params.type, message = params.message })
  return show_message(err, params, ctx, config)
end

local function fab_diagnostics(buf, code)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code == code then
      table.insert(out, d)
    end
  end
  return out
end

local function hover_text(contents)
  if type(contents) == "string" then
    return contents
  end
  if contents.value ~= nil then
    return contents.value
  end
  local parts = {}
  for _, item in ipairs(contents) do
    table.insert(parts, type(item) == "string" and item or item.value)
  end
  return table.concat(parts, "\n")
end

local function edit_new_texts(edit)
  local texts = {}
  for _, edits in pairs(edit and edit.changes or {}) do
    for _, e in ipairs(edits) do
      table.insert(texts, e.newText)
    end
  end
  for _, change in ipairs(edit and edit.documentChanges or {}) do
    for _, e in ipairs(change.edits or {}) do
      table.insert(texts, e.newText)
    end
  end
  return texts
end

local function request(client, buf, method, params)
  local response = client:request_sync(method, params, 5000, buf)
  if response == nil then
    error(method .. ": no response within 5 s")
  end
  if response.err then
    error(method .. ": " .. vim.inspect(response.err))
  end
  return response.result
end

-- The code actions of one request, each resolved when the server sent it without its edit.
local function code_actions(client, buf, params)
  local out = {}
  for _, action in ipairs(request(client, buf, "textDocument/codeAction", params) or {}) do
    if action.edit == nil and action.data ~= nil then
      action = request(client, buf, "codeAction/resolve", action)
    end
    table.insert(out, action)
  end
  return out
end

local function summary(actions)
  return vim.tbl_map(function(a)
    return { title = a.title, kind = a.kind or vim.NIL, new_texts = edit_new_texts(a.edit) }
  end, actions)
end

local function session()
  local path = assert(os.getenv("FABRIC_NVIM_FILE"), "FABRIC_NVIM_FILE is not set")
  dofile(assert(os.getenv("FABRIC_NVIM_CONFIG"), "FABRIC_NVIM_CONFIG is not set"))
  step("config sourced")

  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype

  local client
  vim.wait(wait_ms, function()
    client = vim.lsp.get_clients({ bufnr = buf, name = "fabric_lsp" })[1]
    return client ~= nil and client.initialized == true
  end, 50)
  if client == nil or not client.initialized then
    error("no initialized fabric_lsp client on the buffer within " .. wait_ms .. " ms")
  end
  result.client = { name = client.name, root_dir = client.root_dir or vim.NIL }
  step("attached")

  vim.wait(wait_ms, function() return #fab_diagnostics(buf, "FAB001") > 0 end, 50)
  result.diagnostics = vim.tbl_map(function(d)
    return { lnum = d.lnum, col = d.col, end_col = d.end_col, code = d.code, severity = d.severity,
      message = d.message }
  end, vim.diagnostic.get(buf))
  local diagnostic = fab_diagnostics(buf, "FAB001")[1]
  if diagnostic == nil then
    error("no FAB001 diagnostic within " .. wait_ms .. " ms")
  end
  step("diagnostics")

  vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, math.floor((diagnostic.col + diagnostic.end_col) / 2) })
  local hover = request(client, buf, "textDocument/hover", vim.lsp.util.make_position_params(0, client.offset_encoding))
  result.hover = hover and hover_text(hover.contents) or vim.NIL
  step("hover")

  -- `gra` on the diagnostic: quick fixes, with the raw LSP diagnostic in the context.
  local raw = assert(diagnostic.user_data and diagnostic.user_data.lsp, "diagnostic has no user_data.lsp")
  local quickfixes = code_actions(client, buf, {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = raw.range,
    context = { diagnostics = { raw }, triggerKind = 1 },
  })
  result.quickfixes = summary(quickfixes)
  step("quick fix")

  -- Fix-all: what `vim.lsp.buf.code_action({ context = { only = { "source.fixAll" } } })` asks.
  local fix_all = code_actions(client, buf, {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } },
    context = { diagnostics = {}, only = { "source.fixAll" }, triggerKind = 1 },
  })
  result.fix_all = summary(fix_all)
  step("fix-all")

  -- Apply the fix-all edit: the server analyses the new text (again, nothing may run).
  local applied = fix_all[1] or quickfixes[1]
  if applied == nil or applied.edit == nil then
    error("no code action with an edit: " .. vim.inspect(result.quickfixes) .. vim.inspect(result.fix_all))
  end
  vim.lsp.util.apply_workspace_edit(applied.edit, client.offset_encoding)
  result.text_after_fix = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.wait(wait_ms, function() return #fab_diagnostics(buf, "FAB001") == 0 end, 50)
  result.fab001_after_fix = #fab_diagnostics(buf, "FAB001")
  step("re-checked")

  if os.getenv("FABRIC_NVIM_WAIT_MARKER") == "1" then
    vim.wait(wait_ms, marker_exists, 50)
    step("waited for marker")
  end

  vim.lsp.stop_client(client.id)
  result.client_stopped = vim.wait(5000, function() return client:is_stopped() end, 50)
  step("stopped")
end

vim.api.nvim_create_autocmd("VimEnter", {
  nested = true, -- without it, `:edit` inside the autocommand does not set the filetype
  once = true,
  callback = function()
    local ok, err = xpcall(session, debug.traceback)
    if ok then
      emit_and_quit(0)
    else
      result.error = err
      emit_and_quit(1)
    end
  end,
})
