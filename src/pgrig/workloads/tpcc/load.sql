-- Server-side TPC-C data generation (spec clause 4.3.3.1): the loader calls these functions
-- from N connections in parallel; no row passes through the client.
--
-- Random a-strings (clause 4.3.2.2) are cut at random offsets and random lengths from a
-- 64 KiB pool of random alphanumeric characters drawn once per function call. That keeps
-- the alphabet and length distribution of the spec at a fraction of the cost of drawing
-- every character (bytea substr is O(1), text substr in UTF8 is O(offset)).

CREATE OR REPLACE FUNCTION tpcc_rand(lo int, hi int) RETURNS int
LANGUAGE sql VOLATILE PARALLEL RESTRICTED
AS $$ SELECT lo + floor(random() * (hi - lo + 1))::int $$;

CREATE OR REPLACE FUNCTION tpcc_pool() RETURNS bytea
LANGUAGE sql VOLATILE
AS $$
    SELECT convert_to(string_agg(substr(
        '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
        1 + floor(random() * 62)::int, 1), ''), 'SQL_ASCII')
    FROM generate_series(1, 65536)
$$;

-- A random a-string of length lo..hi from the pool.
CREATE OR REPLACE FUNCTION tpcc_astr(pool bytea, lo int, hi int) RETURNS text
LANGUAGE sql VOLATILE
AS $$
    SELECT encode(substr(pool, 1 + floor(random() * (65537 - hi))::int,
                         lo + floor(random() * (hi - lo + 1))::int), 'escape')
$$;

-- A random n-string (digits) of length n <= 16.
CREATE OR REPLACE FUNCTION tpcc_nstr(n int) RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT lpad(floor(random() * (10::float8 ^ n))::bigint::text, n, '0') $$;

-- Zip code: 4 random digits followed by 11111 (clause 4.3.2.7).
CREATE OR REPLACE FUNCTION tpcc_zip() RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT lpad(floor(random() * 10000)::int::text, 4, '0') || '11111' $$;

-- i_data / s_data (26..50 characters): "ORIGINAL" at a random position when `original`.
-- Callers pass a column computed once per row (a subquery with OFFSET 0), which lets the
-- planner inline this function (an argument used twice must not be volatile).
CREATE OR REPLACE FUNCTION tpcc_original(s text, original boolean) RETURNS text
LANGUAGE sql VOLATILE
AS $$
    SELECT CASE WHEN original
        THEN overlay(s placing 'ORIGINAL' from 1 + floor(random() * (length(s) - 7))::int)
        ELSE s END
$$;

-- NURand(A, x, y) with constant c (clause 2.1.6).
CREATE OR REPLACE FUNCTION tpcc_nurand(a int, x int, y int, c int) RETURNS int
LANGUAGE sql VOLATILE
AS $$ SELECT (((tpcc_rand(0, a) | tpcc_rand(x, y)) + c) % (y - x + 1)) + x $$;

-- item: 100,000 rows, exactly 10% with ORIGINAL in i_data.
CREATE OR REPLACE FUNCTION tpcc_load_item() RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    pool bytea := tpcc_pool();
BEGIN
    INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data)
    SELECT i, im, name, price, tpcc_original(data, orig)
    FROM (
        SELECT i, tpcc_rand(1, 10000) AS im, tpcc_astr(pool, 14, 24) AS name,
               tpcc_rand(100, 10000) / 100.0 AS price, tpcc_astr(pool, 26, 50) AS data,
               o.i IS NOT NULL AS orig
        FROM generate_series(1, 100000) i
        LEFT JOIN (SELECT g AS i FROM generate_series(1, 100000) g ORDER BY random() LIMIT 10000) o
            USING (i)
        OFFSET 0
    ) x;
END
$$;

-- warehouse w and its 100,000 stock rows (exactly 10% ORIGINAL in s_data).
CREATE OR REPLACE FUNCTION tpcc_load_stock(w int) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    pool bytea := tpcc_pool();
BEGIN
    INSERT INTO warehouse
    SELECT w, tpcc_astr(pool, 6, 10), tpcc_astr(pool, 10, 20), tpcc_astr(pool, 10, 20),
           tpcc_astr(pool, 10, 20), tpcc_astr(pool, 2, 2), tpcc_zip(),
           tpcc_rand(0, 2000) / 10000.0, 300000.00;

    INSERT INTO stock
    SELECT i, w, q, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, 0, 0, 0, tpcc_original(data, orig)
    FROM (
        SELECT i, tpcc_rand(10, 100) AS q,
               tpcc_astr(pool, 24, 24) AS d1, tpcc_astr(pool, 24, 24) AS d2,
               tpcc_astr(pool, 24, 24) AS d3, tpcc_astr(pool, 24, 24) AS d4,
               tpcc_astr(pool, 24, 24) AS d5, tpcc_astr(pool, 24, 24) AS d6,
               tpcc_astr(pool, 24, 24) AS d7, tpcc_astr(pool, 24, 24) AS d8,
               tpcc_astr(pool, 24, 24) AS d9, tpcc_astr(pool, 24, 24) AS d10,
               tpcc_astr(pool, 26, 50) AS data, o.i IS NOT NULL AS orig
        FROM generate_series(1, 100000) i
        LEFT JOIN (SELECT g AS i FROM generate_series(1, 100000) g ORDER BY random() LIMIT 10000) o
            USING (i)
        OFFSET 0
    ) x;
END
$$;

-- Districts d_lo..d_hi of warehouse w: district rows, 3,000 customers each (c_last per
-- clause 4.3.3.1 with the load-time C, exactly 10% 'BC'), one history row per customer,
-- 3,000 orders with o_c_id a random permutation of 1..3000, 5..15 lines per order, and the
-- 900 undelivered orders 2101..3000 in new_order.
CREATE OR REPLACE FUNCTION tpcc_load_districts(w int, d_lo int, d_hi int, c_last_c int)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    pool bytea := tpcc_pool();
    ts timestamp := localtimestamp;
BEGIN
    INSERT INTO district
    SELECT d, w, tpcc_astr(pool, 6, 10), tpcc_astr(pool, 10, 20), tpcc_astr(pool, 10, 20),
           tpcc_astr(pool, 10, 20), tpcc_astr(pool, 2, 2), tpcc_zip(),
           tpcc_rand(0, 2000) / 10000.0, 30000.00, 3001
    FROM generate_series(d_lo, d_hi) d;

    INSERT INTO customer
    SELECT c, d, w, tpcc_astr(pool, 8, 16), 'OE', tpcc_last_name(name_no),
           tpcc_astr(pool, 10, 20), tpcc_astr(pool, 10, 20), tpcc_astr(pool, 10, 20),
           tpcc_astr(pool, 2, 2), tpcc_zip(), tpcc_nstr(8) || tpcc_nstr(8), ts,
           CASE WHEN bc_rank <= 300 THEN 'BC' ELSE 'GC' END,
           50000.00, tpcc_rand(0, 5000) / 10000.0, -10.00, 10.00, 1, 0,
           tpcc_astr(pool, 300, 500)
    FROM (
        -- a random 300 of each district's 3,000 customers get 'BC'
        SELECT d, c, row_number() OVER (PARTITION BY d ORDER BY random()) AS bc_rank,
               CASE WHEN c <= 1000 THEN c - 1 ELSE tpcc_nurand(255, 0, 999, c_last_c) END
                   AS name_no
        FROM generate_series(d_lo, d_hi) d CROSS JOIN generate_series(1, 3000) c
        OFFSET 0
    ) x;

    INSERT INTO history
    SELECT c, d, w, d, w, ts, 10.00, tpcc_astr(pool, 12, 24)
    FROM generate_series(d_lo, d_hi) d CROSS JOIN generate_series(1, 3000) c;

    WITH o AS (
        INSERT INTO orders
        SELECT o_id, d, w, c_id, ts, CASE WHEN o_id < 2101 THEN tpcc_rand(1, 10) END,
               tpcc_rand(5, 15), 1
        FROM (
            SELECT d, o_id, row_number() OVER (PARTITION BY d ORDER BY random())::int AS c_id
            FROM generate_series(d_lo, d_hi) d CROSS JOIN generate_series(1, 3000) o_id
        ) p
        RETURNING o_id, o_d_id, o_ol_cnt
    )
    INSERT INTO order_line
    SELECT o.o_id, o.o_d_id, w, o.n, tpcc_rand(1, 100000), w,
           CASE WHEN o.o_id < 2101 THEN ts END, 5,
           CASE WHEN o.o_id < 2101 THEN 0.00 ELSE tpcc_rand(1, 999999) / 100.0 END,
           tpcc_astr(pool, 24, 24)
    FROM (SELECT o_id, o_d_id, generate_series(1, o_ol_cnt) AS n FROM o) o;

    INSERT INTO new_order
    SELECT o_id, d, w FROM generate_series(d_lo, d_hi) d CROSS JOIN generate_series(2101, 3000) o_id;
END
$$;
