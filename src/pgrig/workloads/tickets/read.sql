-- tickets:read (seed 003's workload.sql): a point select by random id.
-- :rows is set by pgrig (-D rows=N) from the generated dataset (the seed hard-coded 5000000).
\set r random(1, :rows)
SELECT id, fkride, fio, contact, fkseat FROM book.tickets WHERE id = :r;
