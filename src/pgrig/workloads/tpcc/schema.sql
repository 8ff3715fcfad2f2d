-- TPC-C schema (spec rev 5.11, clause 1.3), created without indexes: the loader builds the
-- primary keys and the two secondary indexes (indexes.sql) after the data is in.
-- Integers for identifiers and counters, numeric(p,s) for the money and rate columns.
-- `/*PARTITION col*/` marks the tables --partition splits by warehouse (see sql.py); the
-- marker is removed when the schema is created unpartitioned.
-- history has no primary key: the spec defines none (clause 1.3.1) and rows are never read
-- back by key.

CREATE TABLE tpcc_meta (
    id            int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    warehouses    int NOT NULL,
    c_last_load   int NOT NULL,  -- C used for NURand(255, 0, 999) of c_last at load time
    c_id_load     int NOT NULL,  -- C values of c_id and ol_i_id are free at load time; kept
    ol_i_id_load  int NOT NULL,  -- for the record (the run chooses its own)
    partitions    int NOT NULL DEFAULT 0,  -- 0: not partitioned
    jobs          int NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,   -- NULL until the load completed (indexes, vacuum included)
    load_seconds  double precision,
    size_bytes    bigint,
    pgrig_version text
);

CREATE TABLE warehouse (
    w_id       int NOT NULL,
    w_name     varchar(10) NOT NULL,
    w_street_1 varchar(20) NOT NULL,
    w_street_2 varchar(20) NOT NULL,
    w_city     varchar(20) NOT NULL,
    w_state    char(2) NOT NULL,
    w_zip      char(9) NOT NULL,
    w_tax      numeric(4, 4) NOT NULL,
    w_ytd      numeric(12, 2) NOT NULL
);

CREATE TABLE district (
    d_id        int NOT NULL,
    d_w_id      int NOT NULL,
    d_name      varchar(10) NOT NULL,
    d_street_1  varchar(20) NOT NULL,
    d_street_2  varchar(20) NOT NULL,
    d_city      varchar(20) NOT NULL,
    d_state     char(2) NOT NULL,
    d_zip       char(9) NOT NULL,
    d_tax       numeric(4, 4) NOT NULL,
    d_ytd       numeric(12, 2) NOT NULL,
    d_next_o_id int NOT NULL
);

CREATE TABLE customer (
    c_id           int NOT NULL,
    c_d_id         int NOT NULL,
    c_w_id         int NOT NULL,
    c_first        varchar(16) NOT NULL,
    c_middle       char(2) NOT NULL,
    c_last         varchar(16) NOT NULL,
    c_street_1     varchar(20) NOT NULL,
    c_street_2     varchar(20) NOT NULL,
    c_city         varchar(20) NOT NULL,
    c_state        char(2) NOT NULL,
    c_zip          char(9) NOT NULL,
    c_phone        char(16) NOT NULL,
    c_since        timestamp NOT NULL,
    c_credit       char(2) NOT NULL,
    c_credit_lim   numeric(12, 2) NOT NULL,
    c_discount     numeric(4, 4) NOT NULL,
    c_balance      numeric(12, 2) NOT NULL,
    c_ytd_payment  numeric(12, 2) NOT NULL,
    c_payment_cnt  int NOT NULL,
    c_delivery_cnt int NOT NULL,
    c_data         varchar(500) NOT NULL
) /*PARTITION c_w_id*/;

CREATE TABLE history (
    h_c_id   int NOT NULL,
    h_c_d_id int NOT NULL,
    h_c_w_id int NOT NULL,
    h_d_id   int NOT NULL,
    h_w_id   int NOT NULL,
    h_date   timestamp NOT NULL,
    h_amount numeric(6, 2) NOT NULL,
    h_data   varchar(24) NOT NULL
) /*PARTITION h_w_id*/;

CREATE TABLE orders (
    o_id         int NOT NULL,
    o_d_id       int NOT NULL,
    o_w_id       int NOT NULL,
    o_c_id       int NOT NULL,
    o_entry_d    timestamp NOT NULL,
    o_carrier_id int,
    o_ol_cnt     int NOT NULL,
    o_all_local  int NOT NULL
) /*PARTITION o_w_id*/;

CREATE TABLE new_order (
    no_o_id int NOT NULL,
    no_d_id int NOT NULL,
    no_w_id int NOT NULL
) /*PARTITION no_w_id*/;

CREATE TABLE order_line (
    ol_o_id        int NOT NULL,
    ol_d_id        int NOT NULL,
    ol_w_id        int NOT NULL,
    ol_number      int NOT NULL,
    ol_i_id        int NOT NULL,
    ol_supply_w_id int NOT NULL,
    ol_delivery_d  timestamp,
    ol_quantity    int NOT NULL,
    ol_amount      numeric(6, 2) NOT NULL,
    ol_dist_info   char(24) NOT NULL
) /*PARTITION ol_w_id*/;

CREATE TABLE item (
    i_id    int NOT NULL,
    i_im_id int NOT NULL,
    i_name  varchar(24) NOT NULL,
    i_price numeric(5, 2) NOT NULL,
    i_data  varchar(50) NOT NULL
);

CREATE TABLE stock (
    s_i_id       int NOT NULL,
    s_w_id       int NOT NULL,
    s_quantity   int NOT NULL,
    s_dist_01    char(24) NOT NULL,
    s_dist_02    char(24) NOT NULL,
    s_dist_03    char(24) NOT NULL,
    s_dist_04    char(24) NOT NULL,
    s_dist_05    char(24) NOT NULL,
    s_dist_06    char(24) NOT NULL,
    s_dist_07    char(24) NOT NULL,
    s_dist_08    char(24) NOT NULL,
    s_dist_09    char(24) NOT NULL,
    s_dist_10    char(24) NOT NULL,
    s_ytd        int NOT NULL,
    s_order_cnt  int NOT NULL,
    s_remote_cnt int NOT NULL,
    s_data       varchar(50) NOT NULL
) /*PARTITION s_w_id*/;
