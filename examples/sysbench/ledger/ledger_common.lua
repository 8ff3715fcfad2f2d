-- ledger: options, data (prepare, cleanup) and the commands sysbench offers.

if sysbench.cmdline.command == nil then
   error("Command is required. Supported commands: prepare, run, check, cleanup, help")
end

ACCOUNTS_PER_BRANCH = 1000
INITIAL_BALANCE = 1000

sysbench.cmdline.options = {
   scale = {"Branches per table set (1,000 accounts each)", 1},
   tables = {"Number of table sets (branchesN, accountsN, transfersN)", 1},
   read_pct = {"Percentage of balance enquiries among the transactions", 20},
}

function accounts_total()
   return sysbench.opt.scale * ACCOUNTS_PER_BRANCH
end

local function create_set(con, i)
   print(string.format("Creating table set %d", i))
   con:query(string.format(
      "CREATE TABLE branches%d (id integer PRIMARY KEY, balance bigint NOT NULL)", i))
   con:query(string.format(
      "CREATE TABLE accounts%d (id integer PRIMARY KEY, branch integer NOT NULL, " ..
      "balance bigint NOT NULL)", i))
   con:query(string.format(
      "CREATE TABLE transfers%d (id bigserial PRIMARY KEY, src integer NOT NULL, " ..
      "dst integer NOT NULL, amount integer NOT NULL, at timestamptz NOT NULL DEFAULT now())",
      i))
   con:bulk_insert_init(string.format("INSERT INTO branches%d (id, balance) VALUES", i))
   for b = 1, sysbench.opt.scale do
      con:bulk_insert_next(string.format("(%d, %d)", b,
                                         ACCOUNTS_PER_BRANCH * INITIAL_BALANCE))
   end
   con:bulk_insert_done()
   con:bulk_insert_init(string.format("INSERT INTO accounts%d (id, branch, balance) VALUES", i))
   for a = 1, accounts_total() do
      local branch = math.floor((a - 1) / ACCOUNTS_PER_BRANCH) + 1
      con:bulk_insert_next(string.format("(%d, %d, %d)", a, branch, INITIAL_BALANCE))
   end
   con:bulk_insert_done()
   con:query(string.format("CREATE INDEX transfers%d_src ON transfers%d (src)", i, i))
   con:query(string.format("CREATE INDEX transfers%d_dst ON transfers%d (dst)", i, i))
end

-- Table sets are created in parallel, one thread per set (--threads).
function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for i = sysbench.tid % sysbench.opt.threads + 1, sysbench.opt.tables,
      sysbench.opt.threads do
      create_set(con, i)
   end
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for i = 1, sysbench.opt.tables do
      for _, t in ipairs({"transfers", "accounts", "branches"}) do
         con:query(string.format("DROP TABLE IF EXISTS %s%d", t, i))
      end
   end
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {cmd_cleanup},
   check = {function() return cmd_check() end},  -- cmd_check: ledger_check.lua
}
