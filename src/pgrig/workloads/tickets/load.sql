-- One chunk of book.tickets, ids {lo}..{hi}, generated inside the server (no rows travel
-- through the client), with the value distributions of seed 003's write script.
INSERT INTO book.tickets (id, fkride, fio, contact, fkseat)
SELECT g,
       1 + floor(random() * 100)::int,
       f.a[1 + floor(random() * 110)::int] || ' ' || n.a[1 + floor(random() * 110)::int],
       jsonb_build_object('phone', '+7' || (1000000000 + floor(random() * 9000000000)::bigint)),
       1 + floor(random() * 100)::int
FROM generate_series({lo}::bigint, {hi}::bigint) AS g,
     (SELECT array_agg(fam ORDER BY id) AS a FROM book.fam) AS f,
     (SELECT array_agg(nam ORDER BY id) AS a FROM book.nam) AS n
