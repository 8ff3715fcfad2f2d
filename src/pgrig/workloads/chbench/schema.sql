-- CH-benCHmark's three tables beside TPC-C's nine (Cole et al., DBTest 2011): REGION (5 rows),
-- NATION (62 rows: one per character a c_state can start with, 0-9 A-Z a-z, keyed by that
-- character's code, so customers reach a nation by ascii(substr(c_state, 1, 1))) and SUPPLIER
-- (10,000 rows, whatever the warehouse count: stock reaches a supplier by
-- mod(s_w_id * s_i_id, 10000) = su_suppkey).

CREATE TABLE region (
    r_regionkey int NOT NULL,
    r_name      char(55) NOT NULL,
    r_comment   char(152) NOT NULL
);

CREATE TABLE nation (
    n_nationkey int NOT NULL,
    n_name      char(25) NOT NULL,
    n_regionkey int NOT NULL,
    n_comment   char(152) NOT NULL
);

CREATE TABLE supplier (
    su_suppkey   int NOT NULL,
    su_name      char(25) NOT NULL,
    su_address   varchar(40) NOT NULL,
    su_nationkey int NOT NULL,
    su_phone     char(15) NOT NULL,
    su_acctbal   numeric(12, 2) NOT NULL,
    su_comment   char(100) NOT NULL
);
