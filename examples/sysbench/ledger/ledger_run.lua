-- ledger: the transactions.

-- Moves money between two accounts and their branches. Rows are locked in one order (accounts
-- before branches, each by ascending id), so two transfers never deadlock.
function transfer(con, set)
   local n = accounts_total()
   local src = sysbench.rand.uniform(1, n)
   local dst = sysbench.rand.uniform(1, n - 1)
   if dst >= src then dst = dst + 1 end
   local amount = sysbench.rand.uniform(1, 100)
   local first, second = math.min(src, dst), math.max(src, dst)
   local delta = {[src] = -amount, [dst] = amount}
   con:query("BEGIN")
   for _, id in ipairs({first, second}) do
      con:query(string.format("UPDATE accounts%d SET balance = balance + %d WHERE id = %d",
                              set, delta[id], id))
   end
   local bsrc = math.floor((src - 1) / ACCOUNTS_PER_BRANCH) + 1
   local bdst = math.floor((dst - 1) / ACCOUNTS_PER_BRANCH) + 1
   if bsrc ~= bdst then
      local bdelta = {[bsrc] = -amount, [bdst] = amount}
      for _, id in ipairs({math.min(bsrc, bdst), math.max(bsrc, bdst)}) do
         con:query(string.format("UPDATE branches%d SET balance = balance + %d WHERE id = %d",
                                 set, bdelta[id], id))
      end
   end
   con:query(string.format("INSERT INTO transfers%d (src, dst, amount) VALUES (%d, %d, %d)",
                           set, src, dst, amount))
   con:query("COMMIT")
end

-- An account's balance and its last transfers out.
function balance_enquiry(con, set)
   local id = sysbench.rand.uniform(1, accounts_total())
   con:query(string.format("SELECT balance FROM accounts%d WHERE id = %d", set, id))
   con:query(string.format(
      "SELECT dst, amount FROM transfers%d WHERE src = %d ORDER BY id DESC LIMIT 5", set, id))
end
