module ptemplate.example.com/request_cost

go 1.26
