-- The CI tests of u64 signal words and s:fetch_add (tests/lua/signal_u64.lua,
-- signal_fetch_add.lua) on GPUs, signals of the default kind: values past
-- 2^63 through the stream-ordered kernels, the fetch-add kernel's old
-- values, and the same messages as the host backend.
for _, name in ipairs { "signal_u64", "signal_fetch_add" } do
  dofile(assert(package.searchpath(name, package.path)))
end
