-- POSTs {"type":"increase"} to the counters c0 .. c(N-1) in turn (N: the first script
-- argument, default 16): Benchmarks/pinned's spread mode and Benchmarks/cpu-limit.sh.
wrk.method = "POST"
wrk.body = '{"type":"increase"}'
wrk.headers["Content-Type"] = "application/json"
local requests, count, turn = {}, 0, 0
function init(args)
    count = tonumber(args[1]) or 16
    for i = 0, count - 1 do
        requests[i] = wrk.format(nil, "/v1/spins/c" .. i .. "/events")
    end
end
function request()
    local r = requests[turn]
    turn = (turn + 1) % count
    return r
end
