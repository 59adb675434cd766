-- One headless Neovim session against `fabric-lsp serve`, driven by tests/editors/test_neovim.py.
--
-- Environment:
--   FABRIC_NVIM_CONFIG  Lua file holding the README's Neovim configuration, sourced as a user would.
--   FABRIC_NVIM_FILE    the Python file to open (a fixture copied into a temporary workspace).
--   FABRIC_NVIM_WAIT_MS how long to wait for each step (attach, diagnostics, re-check).
--
-- It records what Neovim itself sees (client, diagnostics, hover, code actions, the buffer after the
-- quick fix, the diagnostics after the edit and after undo) and writes one JSON object to stdout.
-- The Python test makes the assertions. Every path ends in `cquit`, since an uncaught error in a
-- headless session hangs until the outer `timeout`.

local wait_ms = tonumber(os.getenv("FABRIC_NVIM_WAIT_MS") or "20000")
local result = { steps = {}, show_messages = {} }

local function step(name)
  table.insert(result.steps, name)
end

local function emit_and_quit(code)
  io.stdout:write(vim.json.encode(result) .. "\n")
  io.stdout:flush()
  vim.cmd("cquit " .. code)
end

-- Settings problems are reported with window/showMessage; keep them for the test.
local show_message = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, params, ctx, config)
  table.insert(result.show_messages, { type = params.type, message = params.message })
  return show_message(err, params, ctx, config)
end

local function snapshot_diagnostics(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local raw = d.user_data and d.user_data.lsp or nil
    table.insert(out, {
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
      severity = d.severity,
      code = d.code,
      source = d.source,
      message = d.message,
      href = raw and raw.codeDescription and raw.codeDescription.href or vim.NIL,
    })
  end
  return out
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

-- Hover contents may be MarkupContent, a MarkedString or a list of MarkedStrings.
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

-- The newText of every edit in a WorkspaceEdit (`changes` or `documentChanges`).
local function edit_new_texts(edit)
  local texts = {}
  if edit == nil then
    return texts
  end
  for _, edits in pairs(edit.changes or {}) do
    for _, e in ipairs(edits) do
      table.insert(texts, e.newText)
    end
  end
  for _, change in ipairs(edit.documentChanges or {}) do
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
  if client == nil then
    result.clients = vim.tbl_map(function(c) return c.name end, vim.lsp.get_clients())
    error("no fabric_lsp client attached to the buffer within " .. wait_ms .. " ms")
  end
  step("attached")
  result.client = {
    name = client.name,
    initialized = client.initialized,
    root_dir = client.root_dir or vim.NIL,
    offset_encoding = client.offset_encoding,
    init_options = client.config.init_options or vim.NIL,
    server_name = client.server_info and client.server_info.name or vim.NIL,
    -- true when the server registered textDocument/diagnostic (pull) for this client
    pull_diagnostics = client:supports_method("textDocument/diagnostic", buf),
  }

  vim.wait(wait_ms, function() return #fab_diagnostics(buf, "FAB001") > 0 end, 50)
  result.diagnostics = snapshot_diagnostics(buf)
  local diagnostic = fab_diagnostics(buf, "FAB001")[1]
  if diagnostic == nil then
    error("no FAB001 diagnostic within " .. wait_ms .. " ms")
  end
  step("diagnostics")

  -- Hover in the middle of the diagnostic's range, as a user would with `K` on the attribute.
  local middle = math.floor((diagnostic.col + diagnostic.end_col) / 2)
  vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, middle })
  local hover = request(client, buf, "textDocument/hover",
    vim.lsp.util.make_position_params(0, client.offset_encoding))
  result.hover = hover and hover_text(hover.contents) or vim.NIL
  result.hover_kind = hover and type(hover.contents) == "table" and hover.contents.kind or vim.NIL
  step("hover")

  -- Code actions for the diagnostic, with the raw LSP diagnostic in the context (as `gra` sends it).
  local raw = assert(diagnostic.user_data and diagnostic.user_data.lsp, "diagnostic has no user_data.lsp")
  local actions = request(client, buf, "textDocument/codeAction", {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = raw.range,
    context = { diagnostics = { raw }, triggerKind = 1 },
  }) or {}
  result.code_actions = {}
  local quickfix
  for _, action in ipairs(actions) do
    local resolved = false
    -- Neovim 0.11 declares codeAction resolveSupport for `edit`, so the server may send it lazily.
    if action.edit == nil and action.data ~= nil then
      action = request(client, buf, "codeAction/resolve", action)
      resolved = true
    end
    local new_texts = edit_new_texts(action.edit)
    table.insert(result.code_actions, {
      title = action.title,
      kind = action.kind or vim.NIL,
      is_preferred = action.isPreferred or false,
      resolved = resolved,
      new_texts = new_texts,
    })
    -- The fix is recognised by what it inserts, not by its title.
    if quickfix == nil and action.kind == "quickfix"
        and table.concat(new_texts, "\n"):find("mark_forward_method(", 1, true) then
      quickfix = action
    end
  end
  if quickfix == nil then
    error("no quickfix code action inserts mark_forward_method: " .. vim.inspect(result.code_actions))
  end
  result.quickfix = { title = quickfix.title, is_preferred = quickfix.isPreferred or false }
  step("code action")

  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.lsp.util.apply_workspace_edit(quickfix.edit, client.offset_encoding)
  result.text_after_fix = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  result.text_before_fix = before
  step("fix applied")

  vim.wait(wait_ms, function() return #fab_diagnostics(buf, "FAB001") == 0 end, 50)
  result.diagnostics_after_fix = snapshot_diagnostics(buf)
  step("re-checked")

  -- Undo the fix: the finding must come back, which shows the server re-analyses each change
  -- (an empty list from a dead or silent server would otherwise look like success).
  vim.cmd("silent undo")
  result.text_after_undo = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.wait(wait_ms, function() return #fab_diagnostics(buf, "FAB001") > 0 end, 50)
  result.diagnostics_after_undo = snapshot_diagnostics(buf)
  step("undone")

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
