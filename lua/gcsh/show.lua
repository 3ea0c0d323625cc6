local M = {}
function M.show(x) print(tostring(x)) end
return M
