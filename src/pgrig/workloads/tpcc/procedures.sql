-- The five TPC-C transactions (spec clause 2) as PL/pgSQL functions: one round trip each.
-- Inputs are drawn by the pgbench scripts (the terminal's job in the spec); the functions
-- do the database work in the order the spec describes. Isolation: whatever the session
-- uses (READ COMMITTED by default); row locks taken by UPDATE ... RETURNING and
-- SELECT ... FOR UPDATE give the spec's results under concurrency.

-- Last name from a number 0..999 (clause 4.3.2.3), inlined by the planner.
CREATE OR REPLACE FUNCTION tpcc_last_name(n int) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ('{BAR,OUGHT,ABLE,PRI,PRES,ESE,ANTI,CALLY,ATION,EING}'::text[])[n / 100 + 1]
        || ('{BAR,OUGHT,ABLE,PRI,PRES,ESE,ANTI,CALLY,ATION,EING}'::text[])[n / 10 % 10 + 1]
        || ('{BAR,OUGHT,ABLE,PRI,PRES,ESE,ANTI,CALLY,ATION,EING}'::text[])[n % 10 + 1]
$$;

-- Customer selected by last name (clauses 2.5.2.2, 2.6.2.2): the row at position
-- ceil(n / 2) of the matches sorted by c_first. A separate PL/pgSQL function on purpose:
-- with track_functions = 'pl' its call count in pg_stat_user_functions measures the
-- by-name share of a run from the server side.
CREATE OR REPLACE FUNCTION tpcc_customer_by_name(p_w int, p_d int, p_last int) RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    ids int[];
BEGIN
    SELECT array_agg(c_id ORDER BY c_first) INTO ids
    FROM customer
    WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = tpcc_last_name(p_last);
    IF ids IS NULL THEN
        RAISE EXCEPTION 'TPC-C: no customer named % in warehouse % district %',
            tpcc_last_name(p_last), p_w, p_d;
    END IF;
    RETURN ids[(cardinality(ids) + 1) / 2];
END
$$;

-- New-Order (clause 2.4.2). p_i, p_s, p_q hold item ids, supply warehouses and quantities;
-- only the first p_ol_cnt entries are used. An unused item id raises SQLSTATE TPC01
-- ("Item number is not valid") after the work done so far, which the error undoes.
-- Stock rows are updated in (supply warehouse, item) order so that concurrent New-Orders
-- lock them in one global order and cannot deadlock; ol_number keeps the input position.
CREATE OR REPLACE FUNCTION tpcc_new_order(p_w int, p_d int, p_c int, p_ol_cnt int,
                                          p_i int[], p_s int[], p_q int[])
RETURNS numeric
LANGUAGE plpgsql
AS $$
DECLARE
    v_w_tax    numeric;
    v_d_tax    numeric;
    v_o_id     int;
    v_discount numeric;
    v_last     text;
    v_credit   text;
    r          record;
    v_price    numeric;
    v_iname    text;
    v_idata    text;
    v_sdata    text;
    v_dist     text;
    v_brand    text;
    v_total    numeric := 0;
    ol_k       int[] := '{}';
    ol_i       int[] := '{}';
    ol_s       int[] := '{}';
    ol_q       int[] := '{}';
    ol_amt     numeric[] := '{}';
    ol_dist    text[] := '{}';
BEGIN
    SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
    UPDATE district SET d_next_o_id = d_next_o_id + 1
    WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_tax, d_next_o_id - 1 INTO v_d_tax, v_o_id;
    SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;

    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
                        o_all_local)
    VALUES (v_o_id, p_d, p_w, p_c, localtimestamp, NULL, p_ol_cnt,
            CASE WHEN p_s[1:p_ol_cnt] <@ ARRAY[p_w] THEN 1 ELSE 0 END);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);

    FOR r IN
        SELECT t.i, t.s, t.q, t.k
        FROM unnest(p_i[1:p_ol_cnt], p_s[1:p_ol_cnt], p_q[1:p_ol_cnt])
             WITH ORDINALITY AS t(i, s, q, k)
        ORDER BY t.s, t.i, t.k
    LOOP
        SELECT i_price, i_name, i_data INTO v_price, v_iname, v_idata
        FROM item WHERE i_id = r.i;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'TPC01';
        END IF;
        UPDATE stock
        SET s_quantity = CASE WHEN s_quantity >= r.q + 10 THEN s_quantity - r.q
                              ELSE s_quantity - r.q + 91 END,
            s_ytd = s_ytd + r.q,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN r.s <> p_w THEN 1 ELSE 0 END
        WHERE s_w_id = r.s AND s_i_id = r.i
        RETURNING CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                           WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                           WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                           ELSE s_dist_10 END,
                  s_data
        INTO v_dist, v_sdata;
        -- brand-generic (clause 2.4.2.2), part of the terminal's output
        v_brand := CASE WHEN strpos(v_idata, 'ORIGINAL') > 0
                         AND strpos(v_sdata, 'ORIGINAL') > 0 THEN 'B' ELSE 'G' END;
        ol_k := ol_k || r.k::int;
        ol_i := ol_i || r.i;
        ol_s := ol_s || r.s;
        ol_q := ol_q || r.q;
        ol_amt := ol_amt || (r.q * v_price);
        ol_dist := ol_dist || v_dist;
        v_total := v_total + r.q * v_price;
    END LOOP;

    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
    SELECT v_o_id, p_d, p_w, k, i, s, NULL, q, amt, dist
    FROM unnest(ol_k, ol_i, ol_s, ol_q, ol_amt, ol_dist) AS l(k, i, s, q, amt, dist);

    RETURN round(v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax), 2);
END
$$;

-- The 1% of New-Orders with an unused item id (clause 2.4.1.4): the same work, undone when
-- the item lookup fails. Catching the error here (a subtransaction rollback) keeps pgbench's
-- client alive; the pgbench script wraps the call in BEGIN ... ROLLBACK so the transaction
-- also ends as a real rollback (counted in pg_stat_database.xact_rollback).
CREATE OR REPLACE FUNCTION tpcc_new_order_rollback(p_w int, p_d int, p_c int, p_ol_cnt int,
                                                   p_i int[], p_s int[], p_q int[])
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM tpcc_new_order(p_w, p_d, p_c, p_ol_cnt, p_i, p_s, p_q);
    RETURN 'committed';
EXCEPTION WHEN SQLSTATE 'TPC01' THEN
    RETURN 'rolled back';
END
$$;

-- Payment (clause 2.5.2). p_c_id = 0 selects the customer by last name number p_c_last.
-- Updates w_ytd, d_ytd, c_balance, c_ytd_payment, c_payment_cnt (and c_data of 'BC'
-- customers) and inserts the history row: consistency conditions 1, 8, 9, 10, 12 hold.
CREATE OR REPLACE FUNCTION tpcc_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c_id int,
                                        p_c_last int, p_amount_cents int)
RETURNS numeric
LANGUAGE plpgsql
AS $$
DECLARE
    v_amount  numeric(6, 2) := p_amount_cents / 100.0;
    v_w_name  text;
    v_d_name  text;
    v_c       int;
    v_balance numeric;
    w_addr    text;
    d_addr    text;
    c_info    text;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + v_amount WHERE w_id = p_w
    RETURNING w_name, concat_ws(' ', w_street_1, w_street_2, w_city, w_state, w_zip)
    INTO v_w_name, w_addr;
    UPDATE district SET d_ytd = d_ytd + v_amount WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_name, concat_ws(' ', d_street_1, d_street_2, d_city, d_state, d_zip)
    INTO v_d_name, d_addr;
    IF p_c_id = 0 THEN
        v_c := tpcc_customer_by_name(p_c_w, p_c_d, p_c_last);
    ELSE
        v_c := p_c_id;
    END IF;
    UPDATE customer
    SET c_balance = c_balance - v_amount,
        c_ytd_payment = c_ytd_payment + v_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = CASE WHEN c_credit = 'BC'
                      THEN left(concat_ws(' ', c_id, c_d_id, c_w_id, p_d, p_w, v_amount)
                                || ' | ' || c_data, 500)
                      ELSE c_data END
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c
    RETURNING c_balance, concat_ws(' ', c_first, c_middle, c_last, c_street_1, c_street_2,
                                   c_city, c_state, c_zip, c_phone, c_since, c_credit,
                                   c_credit_lim, c_discount)
    INTO v_balance, c_info;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, localtimestamp, v_amount, v_w_name || '    ' || v_d_name);
    RETURN v_balance;
END
$$;

-- Order-Status (clause 2.6.2): the customer's balance, latest order and its lines.
-- p_c_id = 0 selects the customer by last name number p_c_last. Returns the line count.
CREATE OR REPLACE FUNCTION tpcc_order_status(p_w int, p_d int, p_c_id int, p_c_last int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    v_c       int;
    v_cust    record;
    v_o       record;
    v_lines   text;
    v_n       int;
BEGIN
    IF p_c_id = 0 THEN
        v_c := tpcc_customer_by_name(p_w, p_d, p_c_last);
    ELSE
        v_c := p_c_id;
    END IF;
    SELECT c_balance, c_first, c_middle, c_last INTO v_cust
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    SELECT o_id, o_entry_d, o_carrier_id INTO v_o
    FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c
    ORDER BY o_id DESC LIMIT 1;
    SELECT string_agg(concat_ws(' ', ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,
                                ol_delivery_d), '; '), count(*)
    INTO v_lines, v_n
    FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o.o_id;
    RETURN v_n;
END
$$;

-- Delivery (clause 2.7.4): for each district, the oldest undelivered order. FOR UPDATE with
-- LIMIT 1 skips an order a concurrent Delivery removed and takes the next one.
-- Returns the number of districts with an order delivered (the others are "skipped").
CREATE OR REPLACE FUNCTION tpcc_delivery(p_w int, p_carrier int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    v_d   int;
    v_o   int;
    v_c   int;
    v_sum numeric;
    v_n   int := 0;
    ts    timestamp := localtimestamp;
BEGIN
    FOR v_d IN 1..10 LOOP
        SELECT no_o_id INTO v_o FROM new_order
        WHERE no_w_id = p_w AND no_d_id = v_d
        ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
        UPDATE orders SET o_carrier_id = p_carrier
        WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o
        RETURNING o_c_id INTO v_c;
        WITH l AS (
            UPDATE order_line SET ol_delivery_d = ts
            WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o
            RETURNING ol_amount
        )
        SELECT sum(ol_amount) INTO v_sum FROM l;
        UPDATE customer
        SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END
$$;

-- Stock-Level (clause 2.8.2): distinct items of the district's last 20 orders whose stock
-- is below the threshold. d_next_o_id is read first and the stock probe is a correlated
-- subquery, so the plan is an index range scan plus index probes whatever the estimates
-- (a generic plan with unknown range bounds is the classic misestimate here).
CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w int, p_d int, p_threshold int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    v_next int;
    v_n    int;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(DISTINCT ol_i_id) INTO v_n
    FROM order_line
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
      AND (SELECT s_quantity FROM stock WHERE s_w_id = p_w AND s_i_id = ol_i_id) < p_threshold;
    RETURN v_n;
END
$$;
