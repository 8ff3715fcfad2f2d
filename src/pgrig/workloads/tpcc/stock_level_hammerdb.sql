-- Stock-Level as HammerDB writes it (its SLEV function): ONE query joining district for the
-- range bounds. A deliberate variant (`pgrig run --stock-level hammerdb`), not the default:
-- the bounds d_next_o_id - 20 .. d_next_o_id come from a row the planner has not read, so it
-- estimates the order_line range with default selectivities (thousands of rows where about
-- 200 qualify; seed 004 saw 143,442 estimated against 219 actual) and the plan can go wrong
-- as the data grows. Created on demand by the run that asks for it.
CREATE OR REPLACE FUNCTION tpcc_stock_level_hammerdb(p_w int, p_d int, p_threshold int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    v_n int;
BEGIN
    SELECT count(DISTINCT s_i_id) INTO v_n
    FROM order_line, stock, district
    WHERE ol_w_id = p_w AND ol_d_id = p_d
      AND d_w_id = p_w AND d_id = p_d
      AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20
      AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    RETURN v_n;
END
$$;
