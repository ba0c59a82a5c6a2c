-- PUT /v1/spins/door-<7 digits> {"kind":"door"} for indexes 0 ..< COUNT (env), shared
-- out between wrk's threads (thread t of T takes t-1, t-1+T, ...), then again from the
-- start (200: it exists; a request wrk made and did not send is made then) until wrk
-- stops. Benchmarks/made-spins.py --wrk runs it.
local threads = 0
local total = tonumber(os.getenv("COUNT") or "1000")
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function init(args)
  step = tonumber(os.getenv("THREADS") or "2")
  index = tid - 1 - step
end
request = function()
  index = index + step
  if index >= total then index = tid - 1 end
  return wrk.format("PUT", string.format("/v1/spins/door-%07d", index),
    {["Content-Type"] = "application/json"}, '{"kind":"door"}')
end
