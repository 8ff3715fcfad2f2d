-- The mixed-reporting preset's report (pgrig tune ENV --preset mixed-reporting), run about
-- once in ten transactions beside pgbench's tpcb-like. Each statement needs far more memory per
-- sort or hash than work_mem 4MB (and pgtune-oltp's ~20MB) at scale 10: at those settings
-- they spill to temporary files, and work_mem/hash_mem_multiplier decide their time.
-- A window sort of every account (about 1M rows at scale 10).
SELECT max(rn) FROM (
    SELECT row_number() OVER (PARTITION BY bid ORDER BY abalance DESC, aid) AS rn
    FROM pgbench_accounts
) AS ranked;
-- A hash aggregate with one group per account (a key the primary key's order cannot serve).
SELECT count(*), sum(total) FROM (
    SELECT abalance + aid AS k, sum(abalance) AS total FROM pgbench_accounts GROUP BY abalance + aid
) AS groups;
-- The history the tpcb-like transactions append, joined to its accounts and aggregated.
SELECT h.bid, count(*), sum(h.delta), avg(a.abalance)
FROM pgbench_history AS h JOIN pgbench_accounts AS a ON a.aid = h.aid
GROUP BY h.bid;
