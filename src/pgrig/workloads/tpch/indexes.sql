-- Clause 1.5.7: indexes only on primary keys, foreign keys (single or compound) and single
-- DATE columns. One statement per line (the loader builds them in parallel, largest first).
-- lineitem(l_partkey, l_suppkey) is the foreign key to partsupp: without it Q17 and Q20 scan
-- lineitem once per qualifying part (minutes at SF 1 instead of under a second).
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
CREATE INDEX orders_custkey ON orders (o_custkey);
ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
CREATE INDEX partsupp_suppkey ON partsupp (ps_suppkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
CREATE INDEX customer_nationkey ON customer (c_nationkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
CREATE INDEX supplier_nationkey ON supplier (s_nationkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
