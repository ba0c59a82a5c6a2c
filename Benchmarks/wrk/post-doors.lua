-- POST /v1/spins/door-<n>/events [{"type":"OPEN"},{"type":"CLOSE"}] (the pair leaves a
-- door closed whatever it was, so every request applies events), n in 1..SPINS:
-- - drawn uniformly (SPINS=1: every request to door-1);
-- - with ORDER=1: door-(START+1), door-(START+2), ... in order (thread t of 2 takes every
--   other one), wrapping after door-SPINS; run a few seconds at a time with START moved
--   on by the requests done, it makes (kind `onEvent`) and wakes every door once.
local spins = tonumber(os.getenv("SPINS") or "1")
local ordered = os.getenv("ORDER") == "1"
local start = tonumber(os.getenv("START") or "0")
local body = '[{"type":"OPEN"},{"type":"CLOSE"}]'
local headers = {["Content-Type"] = "application/json"}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function init(args)
  math.randomseed(os.time() + (tid or 0) * 7919)
end
local i = 0
request = function()
  local n
  if ordered then
    n = (start + i * 2 + tid - 1) % spins + 1
    i = i + 1
  else
    n = math.random(spins)
  end
  return wrk.format("POST", "/v1/spins/door-" .. n .. "/events", headers, body)
end
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2f ms p99 %.2f ms\n", latency:percentile(50)/1000, latency:percentile(99)/1000))
end
