-- Seed 003's "Thai bus" booking shape, reduced to what its read and write scripts touch:
-- book.tickets plus the surname (fam) and first-name (nam) tables the write script draws from.
-- fkride and fkseat are plain integers (the seed's rides and seats tables are not generated).
DROP SCHEMA IF EXISTS book CASCADE;
CREATE SCHEMA book;

CREATE TABLE book.fam (id integer PRIMARY KEY, fam text NOT NULL);
CREATE TABLE book.nam (id integer PRIMARY KEY, nam text NOT NULL);

-- No primary key yet: it is built after the bulk load (faster than maintaining it row by row).
CREATE TABLE book.tickets (
    id      bigserial,
    fkride  integer NOT NULL,
    fio     text,
    contact jsonb,
    fkseat  integer NOT NULL
);

-- 110 distinct surnames and 110 first names (10 x 11 syllable pairs each): the write script
-- indexes both arrays with ceil(random()*110), so each table must hold exactly 110 rows.
INSERT INTO book.fam (id, fam)
SELECT (p.i - 1) * 11 + s.j, p.v || s.v
FROM unnest(ARRAY['Sri', 'Chai', 'Wong', 'Boon', 'Suk', 'Rat', 'Sam', 'Thong', 'Kaew', 'Phon'])
         WITH ORDINALITY AS p(v, i),
     unnest(ARRAY['sawat', 'wattana', 'chai', 'siri', 'phan', 'sak', 'thong', 'porn', 'kul',
                  'rak', 'dee']) WITH ORDINALITY AS s(v, j);

INSERT INTO book.nam (id, nam)
SELECT (p.i - 1) * 11 + s.j, p.v || s.v
FROM unnest(ARRAY['Som', 'Nop', 'Pim', 'Arun', 'Kan', 'Mali', 'Nid', 'Pra', 'Sunee', 'Tawan'])
         WITH ORDINALITY AS p(v, i),
     unnest(ARRAY['chai', 'porn', 'ya', 'rat', 'wan', 'dao', 'nee', 'sak', 'thip', 'ni',
                  'suda']) WITH ORDINALITY AS s(v, j);
