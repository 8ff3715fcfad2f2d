#!/usr/bin/env sysbench
-- A small bank ledger for sysbench, in the shape of Percona-Lab's sysbench-tpcc: this main
-- script requires sibling modules (ledger_common: options, prepare, cleanup; ledger_run: the
-- transactions; ledger_check: the consistency check), so sysbench must find them on its Lua
-- path. pgrig puts this script's directory there:
--
--   pgrig db generate ENV --scenario sysbench --script examples/sysbench/ledger/ledger.lua \
--       --define scale=2 --define tables=1
--   pgrig run ENV -w sysbench:examples/sysbench/ledger/ledger.lua -c 4 -T 30
--   pgrig db check ENV
--
-- Each transaction moves money between two accounts of one table set and records the
-- transfer; `check` verifies that no money was made or lost.

require("ledger_common")
require("ledger_run")
require("ledger_check")

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   local set = sysbench.rand.uniform(1, sysbench.opt.tables)
   if sysbench.rand.uniform(1, 100) <= sysbench.opt.read_pct then
      balance_enquiry(con, set)
   else
      transfer(con, set)
   end
end

-- An error sysbench retries (a deadlock, a serialization failure) leaves the transaction
-- aborted: roll it back before the event runs again.
function sysbench.hooks.before_restart_event(err)
   con:query("ROLLBACK")
end
