-- POST [{"type":"OPEN"},{"type":"CLOSE"}] to door-(START+1), door-(START+2), ... in
-- order (thread t of 2 takes every other one), wrapping after door-SPINS: run for a few
-- seconds at a time with START moved on by the requests done, every door is made
-- (kind `onEvent`) and woken once.
local spins = tonumber(os.getenv("SPINS") or "1")
local start = tonumber(os.getenv("START") or "0")
local body = '[{"type":"OPEN"},{"type":"CLOSE"}]'
local headers = {["Content-Type"] = "application/json"}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
  thread:set("count", 2)
end
local i = 0
request = function()
  local n = (start + i * count + tid - 1) % spins + 1
  i = i + 1
  return wrk.format("POST", "/v1/spins/door-" .. n .. "/events", headers, body)
end
