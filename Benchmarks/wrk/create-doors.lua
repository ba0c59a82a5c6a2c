-- PUT /v1/spins/door-<thread>-<n> {"kind":"door"}: every request makes a new Spin.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("PUT", "/v1/spins/door-" .. tid .. "x" .. counter,
    {["Content-Type"] = "application/json"}, '{"kind":"door"}')
end
local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2f ms p99 %.2f ms\n", latency:percentile(50)/1000, latency:percentile(99)/1000))
end
