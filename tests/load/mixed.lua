-- wrk script: a mixed load of case pages, text searches, 1 MB diagnose posts, wizard steps and
-- script downloads. Paths come from paths.txt (one "METHOD PATH" per line), written by run.sh.
local requests = {}
local counter = 0
local errors = 0
local log_body = nil

local function read_all(name)
  local f = assert(io.open(name, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end

init = function(args)
  log_body = read_all(os.getenv("KB_LOAD_LOG") or "load-1mb.log")
  for line in io.lines(os.getenv("KB_LOAD_PATHS") or "paths.txt") do
    local method, path = line:match("^(%S+)%s+(%S+)$")
    if method == "POST" then
      requests[#requests + 1] = wrk.format("POST", path, {["Content-Type"] = "text/plain"}, log_body)
    elseif method == "GET" then
      requests[#requests + 1] = wrk.format("GET", path)
    end
  end
end

request = function()
  counter = counter + 1
  return requests[(counter % #requests) + 1]
end

response = function(status, headers, body)
  if status >= 400 then
    errors = errors + 1
  end
end
