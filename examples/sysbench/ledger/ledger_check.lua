-- ledger: the consistency check (`sysbench ledger.lua check`, `pgrig db check`).

local function one(con, query)
   return tonumber(con:query_row(query))
end

-- Fails (an error: sysbench exits non-zero) when money was made or lost: the sum of the
-- balances must equal what prepare put in, each branch's balance the sum of its accounts',
-- and each account's balance its initial one plus the transfers into it minus those out.
function cmd_check()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for i = 1, sysbench.opt.tables do
      local expected = accounts_total() * INITIAL_BALANCE
      local total = one(con, string.format("SELECT sum(balance) FROM accounts%d", i))
      if total ~= expected then
         error(string.format("set %d: accounts hold %d, expected %d", i, total, expected))
      end
      local branches = one(con, string.format([[
         SELECT count(*) FROM branches%d b
          WHERE b.balance <> (SELECT sum(balance) FROM accounts%d a WHERE a.branch = b.id)]],
         i, i))
      if branches ~= 0 then
         error(string.format("set %d: %d branches disagree with their accounts", i, branches))
      end
      local accounts = one(con, string.format([[
         SELECT count(*) FROM accounts%d a
          WHERE a.balance <> %d
                + coalesce((SELECT sum(amount) FROM transfers%d t WHERE t.dst = a.id), 0)
                - coalesce((SELECT sum(amount) FROM transfers%d t WHERE t.src = a.id), 0)]],
         i, INITIAL_BALANCE, i, i))
      if accounts ~= 0 then
         error(string.format("set %d: %d accounts disagree with their transfers", i, accounts))
      end
      local transfers = one(con, string.format("SELECT count(*) FROM transfers%d", i))
      print(string.format("set %d: %d accounts, %d transfers, balances consistent",
                          i, accounts_total(), transfers))
   end
   con:disconnect()
end
