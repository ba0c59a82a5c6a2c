-- POST /v1/spins/door-<n>/events [{"type":"OPEN"},{"type":"CLOSE"}] for n drawn uniformly
-- from 1..SPINS (SPINS=1: every request to door-1). The pair leaves a door closed
-- whatever it was, so every request applies events.
local spins = tonumber(os.getenv("SPINS") or "1")
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
request = function()
  return wrk.format("POST", "/v1/spins/door-" .. math.random(spins) .. "/events", headers, body)
end
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2f ms p99 %.2f ms\n", latency:percentile(50)/1000, latency:percentile(99)/1000))
end
